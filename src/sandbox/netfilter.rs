//! What confines a step that declares `egress` (issue 24), besides what
//! every step gets: the sockets it may open, and under Landlock the one TCP
//! port it may connect to.
//!
//! - seccomp: `socket()` succeeds only for TCP (`AF_INET`/`AF_INET6`,
//!   `SOCK_STREAM`, protocol 0 or `IPPROTO_TCP`); every other family (unix,
//!   netlink, packet, vsock, …), UDP, raw and SCTP sockets fail (EACCES).
//!   So a unix socket (`docker.sock`) and UDP (DNS) are out of reach.
//! - Landlock (ABI 4, Linux 6.7): `connect()` over TCP only to the proxy's
//!   port, `bind()` to none. The kernel checks the port, not the address: a
//!   remote host listening on that same port number is reachable directly.
//!   Below ABI 4 the step is not run (the ruleset is a hard requirement).

use super::SandboxError;

/// Whether this kernel's Landlock can restrict TCP connects (ABI 4).
pub(crate) fn landlock_net_supported() -> bool {
    use landlock::{ABI, Access, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr};
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessNet::from_all(ABI::V4))
        .and_then(landlock::Ruleset::create)
        .is_ok()
}

/// The seccomp filter that leaves a step TCP sockets only.
pub(crate) fn apply_tcp_only() -> Result<(), SandboxError> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
        SeccompFilter, SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(SandboxError::Arch)?;
    let ne = |arg: u8, v: i32| {
        SeccompCondition::new(arg, Len::Dword, Op::Ne, u64::from(v.cast_unsigned()))
    };
    let stream = libc::SOCK_STREAM;
    let (nb, ce) = (libc::SOCK_NONBLOCK, libc::SOCK_CLOEXEC);
    // Refused when any rule holds (each is the conjunction of its conditions).
    let rules = vec![
        // not IPv4 and not IPv6
        SeccompRule::new(vec![ne(0, libc::AF_INET)?, ne(0, libc::AF_INET6)?])?,
        // not a stream (with or without the two flags)
        SeccompRule::new(vec![
            ne(1, stream)?,
            ne(1, stream | nb)?,
            ne(1, stream | ce)?,
            ne(1, stream | nb | ce)?,
        ])?,
        // not TCP
        SeccompRule::new(vec![ne(2, 0)?, ne(2, libc::IPPROTO_TCP)?])?,
    ];
    let errno = SeccompAction::Errno(u32::try_from(libc::EACCES).unwrap_or(1));
    let program: BpfProgram = SeccompFilter::new(
        std::iter::once((libc::SYS_socket, rules)).collect(),
        SeccompAction::Allow,
        errno,
        arch,
    )
    .and_then(TryInto::try_into)?;
    seccompiler::apply_filter(&program)?;
    Ok(())
}
