//! The server to probe, found on this machine: by its pid (`--server-pid`), or by the local
//! port of the target's URL (the processes holding the socket that listens on it, from
//! `/proc/net/tcp{,6}` and each process's open files).

use super::ProbeError;
use std::path::PathBuf;

/// The server's processes, as found.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// Every process of the server (nginx: its master and workers share the socket).
    pub pids: Vec<u32>,
    /// The port its requests arrive on.
    pub port: u16,
    /// Its executable (the first process's), where function probes attach.
    pub exe: PathBuf,
    /// Its name (`comm`).
    pub name: String,
}

/// The server listening on `port`, or given as `pids` (then checked to exist).
pub fn find(pids: &[u32], port: u16) -> Result<Server, ProbeError> {
    let pids = if pids.is_empty() {
        let found = listening(port);
        if found.is_empty() {
            return Err(ProbeError::Input(format!(
                "--server-probes: no process on this machine listens on port {port}; give the \
                 server's pid with --server-pid, or probe from the server's host"
            )));
        }
        found
    } else {
        for &p in pids {
            if !alive(p) {
                return Err(ProbeError::Input(format!(
                    "--server-pid {p}: no such process (it may have exited); `pgrep NAME` lists \
                     a server's pids"
                )));
            }
        }
        pids.to_vec()
    };
    let first = pids[0];
    let exe = std::fs::read_link(format!("/proc/{first}/exe")).map_err(|e| {
        ProbeError::Input(format!(
            "--server-pid {first}: cannot read its executable ({e}): probing another user's \
             server needs root"
        ))
    })?;
    Ok(Server {
        name: comm(first),
        pids,
        port,
        exe,
    })
}

/// Whether process `pid` exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat_field(&stat, 0) != Some("Z"),
        Err(_) => false,
    }
}

/// The name of process `pid`.
pub fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// CPU time (user + system) of the processes `pids` and their threads, seconds; `None` when
/// none could be read.
pub fn cpu_s(pids: &[u32]) -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks <= 0 {
        return None;
    }
    let mut total = None;
    for p in pids {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // After the state: utime and stime are fields 14 and 15 of stat(5), 11 and 12 here.
        let (Some(u), Some(s)) = (stat_field(&stat, 11), stat_field(&stat, 12)) else {
            continue;
        };
        let (Ok(u), Ok(s)) = (u.parse::<u64>(), s.parse::<u64>()) else {
            continue;
        };
        *total.get_or_insert(0.0) += (u + s) as f64 / ticks as f64;
    }
    total
}

/// CPU time of the process trees of `roots`, seconds: every live process of a tree (its
/// own user and system time and its waited-for children's: nginx's or Apache's workers
/// restarted during the run are counted in their parent's). `None` when none could be read.
pub fn tree_cpu_s(roots: &[u32]) -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks <= 0 {
        return None;
    }
    let tree = descendants(roots);
    let mut total = None;
    for p in tree {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // utime, stime, cutime, cstime: fields 14-17 of stat(5), 11-14 here.
        let fields: Option<Vec<u64>> = (11..15)
            .map(|i| stat_field(&stat, i)?.parse::<u64>().ok())
            .collect();
        let Some(fields) = fields else { continue };
        *total.get_or_insert(0.0) += fields.iter().sum::<u64>() as f64 / ticks as f64;
    }
    total
}

/// `roots` and every live process below them.
pub fn descendants(roots: &[u32]) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for entry in procs.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some(ppid) = stat_field(&stat, 1).and_then(|p| p.parse::<u32>().ok()) {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut tree: Vec<u32> = roots.to_vec();
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        for &(child, parent) in &parent_of {
            if parent == p && !tree.contains(&child) {
                tree.push(child);
            }
        }
        i += 1;
    }
    tree
}

/// Field `i` of a `/proc/PID/stat` line counted from the state (0), after the name in
/// parentheses (which may hold spaces).
fn stat_field(stat: &str, i: usize) -> Option<&str> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(i)
}

/// The processes that hold a TCP socket listening on `port` (IPv4 or IPv6), in pid order.
pub fn listening(port: u16) -> Vec<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listen_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return Vec::new();
    }
    let mut pids = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|l| {
                let l = l.to_string_lossy();
                inodes
                    .iter()
                    .any(|i| l.strip_prefix("socket:[") == Some(&format!("{i}]")))
            })
        });
        if holds {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

/// The inodes of the sockets in a `/proc/net/tcp` table listening (state 0A) on `port`.
fn listen_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = f.get(1)?.rsplit(':').next()?;
            let listening = *f.get(3)? == "0A";
            let matches = u16::from_str_radix(local_port, 16).ok()? == port;
            (listening && matches).then(|| f.get(9)?.parse().ok())?
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_socket_is_found_in_the_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:4E20 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n\
   1: 0100007F:4E20 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0 20 4 30 10 -1\n\
   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0 100 0 0 10 0\n";
        assert_eq!(listen_inodes(table, 0x4E20), vec![4242]);
        assert_eq!(listen_inodes(table, 8080), vec![77]);
        assert!(listen_inodes(table, 81).is_empty());
    }

    #[test]
    fn this_process_is_alive_and_has_a_name() {
        let me = std::process::id();
        assert!(alive(me));
        assert!(!comm(me).is_empty());
        assert!(cpu_s(&[me]).is_some());
        assert_eq!(stat_field("1 (a b) S 0 1", 0), Some("S"));
    }

    #[test]
    fn a_listener_of_this_process_is_found_by_its_port() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(listening(port), vec![std::process::id()]);
        let server = find(&[], port).unwrap();
        assert_eq!(server.pids, vec![std::process::id()]);
        drop(l);
        assert!(matches!(find(&[], port), Err(ProbeError::Input(_))));
    }
}
