//! Thin, checked wrappers over the system calls and commands the runtime
//! needs: running `ip`, entering a namespace on a short-lived thread, and
//! the preconditions (root, `/dev/net/tun`, `ip`) checked up front.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;

use crate::NetError;

/// Checks what every topology needs before anything is created, so a
/// missing piece is one clear line, not a half-built lab.
pub fn check_preconditions() -> Result<(), NetError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(NetError::Precondition(
            "aerolink needs root (CAP_NET_ADMIN) to create network namespaces and TUN devices; run it with sudo".into(),
        ));
    }
    if std::fs::metadata("/dev/net/tun").is_err() {
        return Err(NetError::Precondition(
            "/dev/net/tun is missing: load the tun module (modprobe tun) or, in a container, pass --device /dev/net/tun".into(),
        ));
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Err(NetError::Precondition("the `ip` command (iproute2) is missing: apt-get install iproute2".into()));
    }
    Ok(())
}

/// Runs `ip ARGS…`, turning a failure into an error that shows the command.
pub fn ip(args: &[&str]) -> Result<(), NetError> {
    let out = Command::new("ip").args(args).output().map_err(|e| NetError::Command { cmd: format!("ip {}", args.join(" ")), msg: e.to_string() })?;
    if !out.status.success() {
        return Err(NetError::Command {
            cmd: format!("ip {}", args.join(" ")),
            msg: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// Runs `f` on a new thread that has entered the named namespace. Only that
/// thread moves (setns is per thread), and it ends with `f`, so the rest of
/// the process never leaves the host namespace.
pub fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> Result<T, NetError> + Send + 'static) -> Result<T, NetError> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = File::open(&path).map_err(|e| NetError::Io(format!("open {path}"), e))?;
        // SAFETY: a valid namespace fd and a flag the kernel checks.
        if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(NetError::Io(format!("setns {path}"), std::io::Error::last_os_error()));
        }
        f()
    })
    .join()
    .map_err(|_| NetError::Command { cmd: "namespace thread".into(), msg: "panicked".into() })?
}

/// Writes a sysctl inside the calling thread's namespace.
pub fn write_sysctl(key: &str, value: &str) -> Result<(), NetError> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::write(&path, value).map_err(|e| NetError::Io(format!("write {path}"), e))
}

pub fn cstring(s: &str) -> CString {
    // Names we build never contain NUL.
    CString::new(s).expect("no NUL in names")
}

/// Lowers the timer slack of the calling thread to 1 ns so that sleeps end
/// when asked, not up to 50 µs later (the default slack).
pub fn tight_timer_slack() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// With `AEROLINK_REALTIME=1`, asks for real-time (SCHED_FIFO) priority for
/// the calling thread. Off by default: together with the pump's polling it
/// would trip the kernel's real-time throttling (measured: p99 error 25 ms),
/// and polling alone already meets the 100 µs target. Returns whether it was
/// granted.
pub fn realtime_priority() -> bool {
    if std::env::var("AEROLINK_REALTIME").map(|v| v != "1").unwrap_or(true) {
        return false;
    }
    let param = libc::sched_param { sched_priority: 20 };
    // SAFETY: a valid sched_param for the calling thread (pid 0).
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}
