use super::*;

fn rules(list: &[&str]) -> Rules {
    Rules::parse(&list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).expect("rules")
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

#[test]
fn a_name_without_port_allows_80_and_443_only() {
    let r = rules(&["api.example.com"]);
    assert_eq!(r.admit("api.example.com", 443), Ok(None));
    assert_eq!(r.admit("API.Example.com.", 80), Ok(None));
    for port in [22, 8080, 444, 1] {
        let e = r.admit("api.example.com", port).expect_err("other port");
        assert!(e.contains("other ports"), "{e}");
    }
    assert!(r.admit("api.example.com", 0).is_err());
}

#[test]
fn a_port_entry_allows_that_port_only() {
    let r = rules(&["localhost:8080", "*.example.com:8443"]);
    assert_eq!(r.admit("localhost", 8080), Ok(None));
    assert!(r.admit("localhost", 443).is_err());
    assert_eq!(r.admit("a.b.example.com", 8443), Ok(None));
    assert!(
        r.admit("example.com", 8443).is_err(),
        "the wildcard is below"
    );
    assert!(r.admit("a.example.com", 443).is_err());
}

#[test]
fn undeclared_hosts_and_look_alikes_are_refused() {
    let r = rules(&["api.example.com", "*.good.org"]);
    for host in [
        "example.com",
        "api.example.com.evil.net",
        "evilapi.example.com",
        "x.api.example.com",
        "good.org",
        "xgood.org",
        "good.org.evil",
        "api.example.com@evil.net",
        "",
        "a b",
    ] {
        let e = r.admit(host, 443).expect_err(host);
        assert!(!e.is_empty());
    }
}

#[test]
fn raw_ips_pass_only_when_declared_as_ips() {
    let r = rules(&[
        "api.example.com",
        "127.0.0.1:9000",
        "[::1]:9001",
        "10.1.2.3",
    ]);
    assert_eq!(r.admit("127.0.0.1", 9000), Ok(Some(ip("127.0.0.1"))));
    assert!(r.admit("127.0.0.1", 9001).is_err());
    assert_eq!(r.admit("[::1]", 9001), Ok(Some(ip("::1"))));
    assert_eq!(r.admit("::1", 9001), Ok(Some(ip("::1"))));
    // The mapped form is the IPv4 address.
    assert_eq!(
        r.admit("[::ffff:127.0.0.1]", 9000),
        Ok(Some(ip("127.0.0.1")))
    );
    assert_eq!(r.admit("10.1.2.3", 443), Ok(Some(ip("10.1.2.3"))));
    for (host, port) in [
        ("93.184.216.34", 443),
        ("169.254.169.254", 80),
        ("127.0.0.2", 9000),
        ("[::2]", 9001),
        ("10.1.2.3", 22),
    ] {
        let e = r.admit(host, port).expect_err(host);
        assert!(e.contains("raw IP"), "{e}");
    }
}

#[test]
fn lax_ip_forms_are_names_that_match_nothing_declared() {
    let r = rules(&["127.0.0.1:9000", "api.example.com"]);
    for host in [
        "127.1",
        "0x7f.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "127.000.000.001",
    ] {
        assert!(r.admit(host, 9000).is_err(), "{host}");
    }
}

#[test]
fn a_declared_name_may_not_resolve_to_an_address_not_public() {
    let r = rules(&["api.example.com", "*.example.org"]);
    for addr in [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",
        "100.100.100.200",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00:ec2::254",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:1::",
        "224.0.0.1",
        "255.255.255.255",
    ] {
        let e = r.pick("api.example.com", 443, &[ip(addr)]).expect_err(addr);
        assert!(e.contains("resolves to"), "{e}");
    }
    assert_eq!(
        r.pick(
            "api.example.com",
            443,
            &[ip("10.0.0.1"), ip("93.184.216.34")]
        ),
        Ok(ip("93.184.216.34"))
    );
    assert_eq!(
        r.pick("a.example.org", 443, &[ip("2606:2800:220:1::1")]),
        Ok(ip("2606:2800:220:1::1"))
    );
    assert!(r.pick("api.example.com", 443, &[]).is_err());
}

#[test]
fn a_private_address_passes_when_declared_as_such() {
    let r = rules(&["internal.corp", "10.0.0.7:443", "localhost:8080"]);
    assert_eq!(
        r.pick("internal.corp", 443, &[ip("10.0.0.7")]),
        Ok(ip("10.0.0.7"))
    );
    assert!(r.pick("internal.corp", 443, &[ip("10.0.0.8")]).is_err());
    assert_eq!(
        r.pick("localhost", 8080, &[ip("127.0.0.1")]),
        Ok(ip("127.0.0.1"))
    );
    // localhost may be loopback only.
    assert!(r.pick("localhost", 8080, &[ip("169.254.169.254")]).is_err());
}

#[test]
fn bad_entries_say_why() {
    for bad in ["", "http://x", "a b", "x:99999", "x:0", "*.", "[::1"] {
        let e = Rules::parse(&[bad.to_owned()]).expect_err(bad);
        assert!(e.starts_with("egress:"), "{e}");
    }
}
