//! Which addresses are on the public internet, and every spelling of one an
//! HTTP client or a resolver accepts (pure).
//!
//! A step that reaches loopback, link-local (the cloud metadata services at
//! `169.254.169.254`, `169.254.170.2`, `fd00:ec2::254`), private,
//! carrier-grade NAT, unique-local, multicast or unspecified addresses talks
//! to the runner's own services or steals its cloud credentials: such an
//! address is [`is_public`] `false`. The IPv4 spellings `inet_aton` (and so
//! `getaddrinfo`, which resolves them) reads are all read here: `127.1`,
//! `2130706433`, `0x7f000001`, `0177.0.0.1`; IPv4-mapped, NAT64 and 6to4
//! IPv6 addresses are judged by the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The address a URL host means when it is one, in any spelling a resolver
/// reads as a number (`[::1]`, `127.1`, `2130706433`, `0x7f.1`, `0177.0.0.1`);
/// None for a name.
pub fn host_ip(host: &str) -> Option<IpAddr> {
    let h = host.trim_end_matches('.');
    if let Some(inner) = h.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let inner = inner.split('%').next().unwrap_or(inner);
        return inner
            .parse::<Ipv6Addr>()
            .ok()
            .map(|v| canonical(IpAddr::V6(v)));
    }
    if let Ok(ip) = h.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    lax_ipv4(h).map(IpAddr::V4)
}

/// `inet_aton`'s reading: one to four parts separated by dots, each decimal,
/// `0x` hex or `0` octal; the last part fills the bytes left.
fn lax_ipv4(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut nums: Vec<u64> = Vec::with_capacity(4);
    for p in &parts {
        let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X"))
        {
            (h, 16)
        } else if p.len() > 1 && p.starts_with('0') {
            (&p[1..], 8)
        } else {
            (*p, 10)
        };
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) || digits.len() > 12 {
            return None;
        }
        nums.push(u64::from_str_radix(digits, radix).ok()?);
    }
    let (last, head) = nums.split_last()?;
    if head.iter().any(|&n| n > 255) {
        return None;
    }
    let room = 8 * (4 - head.len() as u32);
    if room < 64 && *last >= 1u64 << room {
        return None;
    }
    let mut v: u64 = 0;
    for (i, &n) in head.iter().enumerate() {
        v |= n << (24 - 8 * i as u32);
    }
    v |= last;
    u32::try_from(v).ok().map(Ipv4Addr::from)
}

/// Whether an address is on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => v4_public(v4),
        IpAddr::V6(v6) => v6_public(v6),
    }
}

fn v4_public(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0
        // carrier-grade NAT (and Alibaba's metadata service at 100.100.100.200)
        || (o[0] == 100 && (o[1] & 0xc0) == 64)
        // IETF protocol assignments, benchmarking, reserved
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        || o[0] >= 240)
}

fn v6_public(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address: judge that one.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return v4_public(Ipv4Addr::new(a, b, c, d));
    }
    if s[0] == 0x2002 {
        let [a, b] = s[1].to_be_bytes();
        let [c, d] = s[2].to_be_bytes();
        return v4_public(Ipv4Addr::new(a, b, c, d));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local (fd00:ec2::254, the AWS metadata service)
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || s[0..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible (deprecated)
}

/// What kind of address a non-public one is, for messages.
pub fn kind(ip: IpAddr) -> &'static str {
    match canonical(ip) {
        IpAddr::V4(v4) if v4.is_loopback() => "loopback",
        IpAddr::V6(v6) if v6.is_loopback() => "loopback",
        IpAddr::V4(v4) if v4.is_unspecified() => "unspecified (this machine)",
        IpAddr::V6(v6) if v6.is_unspecified() => "unspecified (this machine)",
        IpAddr::V4(v4) if v4.is_link_local() => "link-local, the cloud metadata service's range",
        IpAddr::V4(v4) if v4.is_private() => "private",
        IpAddr::V4(v4) if v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64 => {
            "carrier-grade NAT"
        }
        IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80 => "link-local",
        IpAddr::V6(v6) if (v6.segments()[0] & 0xfe00) == 0xfc00 => {
            "unique-local (the AWS metadata service's IPv6 is one)"
        }
        _ => "not public",
    }
}

/// Whether a host name (not an address) names the machine itself or its
/// local network by convention: `localhost` and names under it, a name of
/// one label (resolved through the runner's search domains: `metadata`),
/// and names under `internal` (`metadata.google.internal`), `local`
/// (mDNS), `localdomain`, `home.arpa` and `lan`. What it is, for messages.
pub fn local_name(host: &str) -> Option<&'static str> {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    if h.is_empty() || h.starts_with('[') || host_ip(&h).is_some() {
        return None;
    }
    if h == "localhost" || h.ends_with(".localhost") {
        return Some("a loopback name");
    }
    if !h.contains('.') {
        return Some("a one-label name (resolved through the runner's search domains)");
    }
    const LOCAL: [&str; 5] = ["internal", "local", "localdomain", "home.arpa", "lan"];
    LOCAL
        .iter()
        .any(|d| h.ends_with(&format!(".{d}")))
        .then_some("a local-network name (`metadata.google.internal` is one)")
}

/// Why a URL host is known, before any lookup, to lead off the public
/// internet (an address that is not public, in any spelling, or a
/// [`local_name`]); None when only resolving it can tell.
pub fn known_local(host: &str) -> Option<String> {
    match host_ip(host) {
        Some(ip) if !is_public(ip) => Some(format!(
            "{ip} ({}), an address that is not public",
            kind(ip)
        )),
        Some(_) => None,
        None => local_name(host).map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_local_address_is_read() {
        for (h, want) in [
            ("127.0.0.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("2130706433", "127.0.0.1"),
            ("0x7f000001", "127.0.0.1"),
            ("0X7F.1", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("017700000001", "127.0.0.1"),
            ("0", "0.0.0.0"),
            ("0.0.0.0", "0.0.0.0"),
            ("169.254.169.254", "169.254.169.254"),
            ("169.254.43518", "169.254.169.254"),
            ("0xa9fea9fe", "169.254.169.254"),
            ("[::1]", "::1"),
            ("[::ffff:127.0.0.1]", "127.0.0.1"),
            ("[::ffff:7f00:1]", "127.0.0.1"),
            ("[fd00:ec2::254]", "fd00:ec2::254"),
            ("127.0.0.1.", "127.0.0.1"),
        ] {
            let ip = host_ip(h).unwrap_or_else(|| panic!("{h}"));
            assert_eq!(ip.to_string(), want, "{h}");
            assert!(!is_public(ip), "{h}");
            assert!(known_local(h).is_some(), "{h}");
        }
        for h in [
            "256.0.0.1",
            "1.2.3.4.5",
            "0x",
            "08.0.0.1",
            "example.com",
            "1.2.3.a",
            "4294967296",
        ] {
            assert_eq!(host_ip(h), None, "{h}");
        }
        assert_eq!(host_ip("1.2.3.4"), Some("1.2.3.4".parse().unwrap()));
        assert!(is_public("8.8.8.8".parse().unwrap()));
        assert!(is_public("2606:4700::1111".parse().unwrap()));
        for private in [
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "169.254.170.2",
            "fc00::1",
            "64:ff9b::7f00:1",
            "2002:7f00:1::",
        ] {
            assert!(!is_public(host_ip(private).unwrap()), "{private}");
        }
    }

    #[test]
    fn local_names_are_known() {
        for h in [
            "localhost",
            "LOCALHOST.",
            "a.localhost",
            "metadata",
            "metadata.google.internal",
            "printer.local",
            "x.home.arpa",
        ] {
            assert!(known_local(h).is_some(), "{h}");
        }
        for h in ["example.com", "api.github.com", "127.0.0.1.nip.io"] {
            assert_eq!(known_local(h), None, "{h}");
        }
    }
}
