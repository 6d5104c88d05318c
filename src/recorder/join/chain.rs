//! The server's functions of one request: its hits (function index, time), in the order the
//! kernel saw them on the thread that read the request, paired into the phases between
//! consecutive functions of `--server-fn`'s list.
//!
//! A function pairs only with the one before it in the list, once: a Go function whose
//! goroutine's stack grows at its entry runs its entry twice (`runtime.morestack` restarts
//! it), so its probe fires twice for one call, and the second hit is not a second request.
//! Several requests completed by one read (pipelining, HTTP/2) each get one pass of the
//! chain, in turn: a hit of the first function once the chain is complete begins the next.

/// The chain's phases of the `nth` pass (from 0) through `n` functions in `hits`: one per
/// pair of consecutive functions, then (with three or more) the first to the last, each as
/// (duration, when it ended); `None` for a pair not reached.
pub(super) fn phases(
    hits: impl Iterator<Item = (u16, u64)>,
    n: usize,
    nth: usize,
) -> Vec<Option<(u64, u64)>> {
    let pairs = n.saturating_sub(1);
    let mut out = vec![None; pairs + usize::from(n > 2)];
    if n < 2 {
        return out;
    }
    let mut pass = 0;
    // The next function expected (0: none yet), the pass's start and its last hit.
    let (mut next, mut start, mut prev) = (0usize, 0u64, 0u64);
    for (index, ns) in hits {
        let index = index as usize;
        if index == 0 && (next == 0 || next == n) {
            if next == n {
                pass += 1;
                if pass > nth {
                    break;
                }
            }
            (next, start, prev) = (1, ns, ns);
            if pass == nth {
                out.iter_mut().for_each(|p| *p = None);
            }
            continue;
        }
        if index != next || next == 0 {
            continue;
        }
        if pass == nth {
            out[index - 1] = Some((ns.saturating_sub(prev), ns));
            if index == n - 1 && n > 2 {
                out[pairs] = Some((ns.saturating_sub(start), ns));
            }
        }
        prev = ns;
        next += 1;
    }
    if pass < nth {
        out.iter_mut().for_each(|p| *p = None);
    }
    out
}
