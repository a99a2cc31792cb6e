//! Thin, checked wrappers over the system calls and commands the runtime
//! needs: running `ip`, entering a namespace on a short-lived thread, and
//! the preconditions (root, `/dev/net/tun`, `ip`) checked up front.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::NetError;

static ROOTLESS: AtomicBool = AtomicBool::new(false);

/// Whether this process runs in a user namespace of its own
/// ([`enter_user_namespace`]): root inside it, an ordinary user outside.
pub fn rootless() -> bool {
    ROOTLESS.load(Ordering::SeqCst)
}

/// For an ordinary user: moves this process into a user namespace of its
/// own, where it is root (its user and group mapped to 0), and a mount
/// namespace of its own with a private `/run/netns`, so that it can build
/// labs as root does. Every namespace it creates is owned by that user
/// namespace and goes when the process ends, however it ends. Returns
/// `false` (and does nothing) for root.
///
/// Must be called while the process has one thread (the kernel refuses
/// `unshare(CLONE_NEWUSER)` otherwise): first thing in `main`.
pub fn enter_user_namespace() -> Result<bool, NetError> {
    // SAFETY: plain queries of our own credentials.
    let (euid, uid, gid) = unsafe { (libc::geteuid(), libc::getuid(), libc::getgid()) };
    if euid == 0 {
        return Ok(false);
    }
    let refuse = |why: String| NetError::Precondition(format!("aerolink needs root, or a user namespace of its own, and {why}: run it with sudo, or see docs/guide.md §2 (without root)"));
    // /dev/net/tun must be open to this user (mode 0666 on most systems).
    if let Err(e) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/net/tun") {
        return Err(refuse(format!("/dev/net/tun is not open to this user ({e}; chmod 0666 /dev/net/tun)")));
    }
    // SAFETY: unshare with namespace flags; the process has one thread.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(refuse(format!("this kernel refuses an unprivileged user namespace ({e}; allow it with sysctl user.max_user_namespaces=15000, kernel.unprivileged_userns_clone=1, and on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0)")));
    }
    let write = |path: &str, text: String| std::fs::write(path, text).map_err(|e| NetError::Io(format!("write {path}"), e));
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    let mount = |src: &str, target: &str, fstype: &str, flags: libc::c_ulong, data: &str| -> Result<(), NetError> {
        let (s, t, f, d) = (cstring(src), cstring(target), cstring(fstype), cstring(data));
        // SAFETY: valid C strings; the kernel checks the rest.
        let r = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, d.as_ptr().cast()) };
        if r != 0 {
            return Err(NetError::Io(format!("mount {fstype} on {target}"), std::io::Error::last_os_error()));
        }
        Ok(())
    };
    // Nothing mounted here is seen outside.
    mount("none", "/", "", libc::MS_REC | libc::MS_PRIVATE, "")?;
    // Our own /run/netns (the host's, if any, stays as it is, unseen).
    if std::path::Path::new("/run/netns").is_dir() {
        mount("aerolink", "/run/netns", "tmpfs", libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC, "mode=0755")?;
    } else {
        mount("aerolink", "/run", "tmpfs", libc::MS_NOSUID | libc::MS_NODEV, "mode=0755")?;
        std::fs::create_dir_all("/run/netns").map_err(|e| NetError::Io("mkdir /run/netns".into(), e))?;
    }
    ROOTLESS.store(true, Ordering::SeqCst);
    Ok(true)
}

/// Creates the named network namespace `/run/netns/NAME`. As root, `ip
/// netns add`; in a user namespace of our own, the same by hand (ip's
/// return to the host's namespace, which that user namespace does not own,
/// would fail): a short-lived thread unshares a network namespace and
/// bind-mounts it onto the name.
pub fn add_netns(name: &str) -> Result<(), NetError> {
    if !rootless() {
        return ip(&["netns", "add", name]);
    }
    let path = format!("/run/netns/{name}");
    std::thread::spawn(move || -> Result<(), NetError> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o444).open(&path).map_err(|e| NetError::Io(format!("create {path}"), e))?;
        // SAFETY: unshare on this thread only; it ends below.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            let e = std::io::Error::last_os_error();
            let _ = std::fs::remove_file(&path);
            return Err(NetError::Io("unshare a network namespace".into(), e));
        }
        let (src, dst, none) = (cstring("/proc/thread-self/ns/net"), cstring(&path), cstring(""));
        // SAFETY: valid C strings.
        if unsafe { libc::mount(src.as_ptr(), dst.as_ptr(), none.as_ptr(), libc::MS_BIND, std::ptr::null()) } != 0 {
            let e = std::io::Error::last_os_error();
            let _ = std::fs::remove_file(&path);
            return Err(NetError::Io(format!("bind-mount the namespace on {path}"), e));
        }
        Ok(())
    })
    .join()
    .map_err(|_| NetError::Command { cmd: "namespace thread".into(), msg: "panicked".into() })?
}

/// Checks what every topology needs before anything is created, so a
/// missing piece is one clear line, not a half-built lab.
pub fn check_preconditions() -> Result<(), NetError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(NetError::Precondition("aerolink needs root (CAP_NET_ADMIN) to create network namespaces and TUN devices, or a user namespace of its own; run it with sudo".into()));
    }
    if std::fs::metadata("/dev/net/tun").is_err() {
        return Err(NetError::Precondition("/dev/net/tun is missing: load the tun module (modprobe tun) or, in a container, pass --device /dev/net/tun".into()));
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
        return Err(NetError::Command { cmd: format!("ip {}", args.join(" ")), msg: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    Ok(())
}

/// Runs `ip -n NS -batch -` on `lines` (one command each, `ip`'s words
/// after `-n NS`): one process for a namespace's whole configuration,
/// where a process per command cost a lab most of its set-up. A failure
/// shows the command that failed, as [`ip`] does.
pub fn ip_batch(ns: &str, lines: &[String]) -> Result<(), NetError> {
    use std::io::Write;
    if lines.is_empty() {
        return Ok(());
    }
    let all = || format!("ip -n {ns} -batch - ({} commands)", lines.len());
    let mut child = Command::new("ip")
        .args(["-n", ns, "-batch", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| NetError::Command { cmd: all(), msg: e.to_string() })?;
    let text = lines.join("\n") + "\n";
    // A write that fails means ip stopped early; its status says why.
    let _ = child.stdin.take().map(|mut i| i.write_all(text.as_bytes()));
    let out = child.wait_with_output().map_err(|e| NetError::Command { cmd: all(), msg: e.to_string() })?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    // ip ends with "Command failed -:N", N the failing line (from 1).
    let failed = err.lines().find_map(|l| l.strip_prefix("Command failed -:")).and_then(|n| n.trim().parse::<usize>().ok()).and_then(|n| lines.get(n.wrapping_sub(1)));
    let msg = err.lines().filter(|l| !l.starts_with("Command failed")).collect::<Vec<_>>().join("; ");
    Err(NetError::Command { cmd: failed.map_or_else(all, |l| format!("ip -n {ns} {l}")), msg: msg.trim().to_string() })
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
    fifo_priority()
}

/// Asks for real-time (SCHED_FIFO, priority 20) scheduling for the calling
/// thread; whether it was granted (root or CAP_SYS_NICE).
pub fn fifo_priority() -> bool {
    let param = libc::sched_param { sched_priority: 20 };
    // SAFETY: a valid sched_param for the calling thread (pid 0).
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch runs every line in its namespace; one that fails is named
    /// in the error with its namespace, as a lone `ip` command would be.
    #[test]
    fn an_ip_batch_names_the_command_that_failed() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || rootless() {
            eprintln!("skipped: needs root to create a network namespace");
            return;
        }
        // Not `al-…`: the tests that count a lab's leftovers, or remove
        // them, run beside the library tests.
        let ns = format!("aerolink-test-ipbatch{}", std::process::id());
        add_netns(&ns).unwrap();
        let ok = ip_batch(&ns, &["link set lo up".into(), "addr add 198.18.250.1/24 dev lo".into(), "addr add 2001:2:0:fa::1/64 dev lo".into()]);
        let shown = Command::new("ip").args(["-n", &ns, "addr", "show", "dev", "lo"]).output().unwrap();
        let bad = ip_batch(&ns, &["link set lo up".into(), "addr add 198.18.251.1/24 dev nosuchdev".into(), "link set lo down".into()]);
        crate::stale::remove_namespace(&ns);
        ok.unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.contains("198.18.250.1/24") && shown.contains("2001:2:0:fa::1/64"), "{shown}");
        let err = bad.unwrap_err().to_string();
        assert!(err.contains(&format!("ip -n {ns} addr add 198.18.251.1/24 dev nosuchdev")) && err.contains("nosuchdev"), "{err}");
        assert!(!err.contains("Command failed"), "{err}");
    }
}
