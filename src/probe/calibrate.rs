//! What a probe hit costs on this machine, measured at the start of a run: the script probes
//! two functions of reqlife's own (written in assembly, so that their first instruction is
//! known) and reads of a UNIX socket (a tracepoint), each with an event's work (a map's
//! update, a line printed), and reqlife times [`CALLS`] calls of each, [`ROUNDS`] times,
//! before and after the probes attach. A hit's cost is the median round's after less the
//! median before; the rounds' lowest and highest give its spread (one round of one load
//! gave 253 to 1,227 ns a tracepoint hit on the 2-core VM: a single round decides nothing).
//!
//! Two uprobes, because their cost depends on the instruction probed: the kernel emulates a
//! `push` (how most functions begin), but must single-step others out of line, a second trap
//! (on the 2-core VM this was written on, about 0.8 µs against 10.8 µs a hit).

use crate::recorder::probes::ProbeCost;
use std::time::Instant;

/// Calls per loop.
pub const CALLS: u32 = 5_000;
/// Loops per measure.
pub const ROUNDS: usize = 7;

#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    // Typed and sized: bpftrace (through bcc) skips symbols of no size.
    ".text",
    ".globl reqlife_calibrate_push",
    ".type reqlife_calibrate_push, @function",
    ".p2align 4",
    "reqlife_calibrate_push:",
    "push rbp",
    "pop rbp",
    "ret",
    ".size reqlife_calibrate_push, . - reqlife_calibrate_push",
    ".globl reqlife_calibrate_step",
    ".type reqlife_calibrate_step, @function",
    ".p2align 4",
    "reqlife_calibrate_step:",
    "lea rax, [rdi + 1]",
    "ret",
    ".size reqlife_calibrate_step, . - reqlife_calibrate_step",
);

#[cfg(target_arch = "x86_64")]
extern "C" {
    fn reqlife_calibrate_push();
    fn reqlife_calibrate_step(x: u64) -> u64;
}

/// The executable whose two calibration functions the probes attach to (by name: see
/// build.rs); `None` off x86-64.
pub fn target() -> Option<std::path::PathBuf> {
    if cfg!(target_arch = "x86_64") {
        std::fs::read_link("/proc/self/exe").ok()
    } else {
        None
    }
}

/// One call of the function the first calibration uprobe is on.
pub fn poke() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the function follows the C ABI and touches no memory but the stack.
    unsafe {
        reqlife_calibrate_push()
    };
}

/// Per-call time (ns) of the push function, the stepped one and a byte through a UNIX socket
/// pair, in each of [`ROUNDS`] rounds.
pub fn rounds() -> Vec<[f64; 3]> {
    (0..ROUNDS).map(|_| loops()).collect()
}

/// One round: per-call time (ns) of the push function, the stepped one and a byte through
/// a UNIX socket pair.
fn loops() -> [f64; 3] {
    let time = |f: &dyn Fn(u64)| {
        let t = Instant::now();
        for i in 0..u64::from(CALLS) {
            f(i);
        }
        t.elapsed().as_nanos() as f64 / f64::from(CALLS)
    };
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the functions above follow the C ABI and touch no memory but the stack.
    let (push, step) = (
        time(&|_| unsafe { reqlife_calibrate_push() }),
        time(&|i| {
            std::hint::black_box(unsafe { reqlife_calibrate_step(i) });
        }),
    );
    #[cfg(not(target_arch = "x86_64"))]
    let (push, step) = (0.0, 0.0);
    // A byte through a pair of UNIX sockets and back: each read fires `sock:sock_recv_length`
    // once (not a system call's tracepoint: enabling one would slow every system call of the
    // machine for the whole run).
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for the two descriptors.
    let paired =
        unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) } == 0;
    let raw = if paired {
        let byte = [1u8];
        let back = std::cell::Cell::new(0u8);
        let t = time(&|_| {
            // SAFETY: valid descriptors and buffers of one byte.
            unsafe {
                libc::send(fds[0], byte.as_ptr().cast(), 1, 0);
                libc::recv(fds[1], back.as_ptr().cast(), 1, 0);
            }
        });
        // SAFETY: ours, closed once.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        t
    } else {
        0.0
    };
    [push, step, raw]
}

/// The median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The cost of a hit from rounds `before` and `after` the probes attached: each kind's
/// median after less its median before (never below 0), and the spread of the rounds after.
pub fn cost(before: &[[f64; 3]], after: &[[f64; 3]]) -> ProbeCost {
    let of = |i: usize| {
        let base = median(before.iter().map(|r| r[i]).collect());
        let added: Vec<f64> = after.iter().map(|r| (r[i] - base).max(0.0)).collect();
        let lo = added.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = added.iter().copied().fold(0.0, f64::max);
        let range = (!added.is_empty()).then_some([lo, hi]);
        // Nothing added by the median round: the hit's cost is below this machine's noise
        // (other work moved the loops more than the probe), not free.
        let m = median(added);
        ((m > 0.0).then_some(m), range)
    };
    let (uprobe, uprobe_range) = of(0);
    let (stepped, _) = of(1);
    let (tracepoint, tracepoint_range) = of(2);
    ProbeCost {
        uprobe_hit_ns: uprobe,
        uprobe_stepped_hit_ns: stepped,
        tracepoint_hit_ns: tracepoint,
        uprobe_hit_range_ns: uprobe_range,
        tracepoint_hit_range_ns: tracepoint_range,
        ..ProbeCost::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_below_the_noise_is_not_called_free() {
        // The rounds after ran faster than the median before: not measured, with its spread.
        let c = cost(
            &[[2.0, 1.0, 900.0], [2.0, 1.0, 1000.0], [2.0, 1.0, 1100.0]],
            &[[800.0, 10_801.0, 950.0], [800.0, 10_801.0, 980.0]],
        );
        assert_eq!(c.tracepoint_hit_ns, None);
        assert_eq!(c.tracepoint_hit_range_ns, Some([0.0, 0.0]));
        assert_eq!(c.uprobe_hit_ns, Some(798.0));
    }

    #[test]
    fn a_hit_costs_what_the_probed_loops_added() {
        let c = cost(&[[2.0, 1.0, 80.0]], &[[800.0, 10_801.0, 280.0]]);
        assert_eq!(c.uprobe_hit_ns, Some(798.0));
        assert_eq!(c.uprobe_stepped_hit_ns, Some(10_800.0));
        assert_eq!(c.tracepoint_hit_ns, Some(200.0));
        // Noise that made a loop faster is no negative cost, nor a measured zero.
        assert_eq!(cost(&[[5.0; 3]], &[[4.0; 3]]).uprobe_hit_ns, None);
        let [push, step, raw] = loops();
        assert!(push >= 0.0 && step >= 0.0 && raw > 0.0);
    }

    #[test]
    fn the_median_round_decides_and_the_rounds_give_the_spread() {
        // One disturbed round of seven (a preempted loop) moves neither median.
        let before = [[1.0, 1.0, 100.0]; 7];
        let mut after = [[1.0, 1.0, 400.0]; 7];
        after[3][2] = 1_400.0;
        after[5][2] = 350.0;
        let c = cost(&before, &after);
        assert_eq!(c.tracepoint_hit_ns, Some(300.0));
        assert_eq!(c.tracepoint_hit_range_ns, Some([250.0, 1_300.0]));
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), 2.5);
    }

    #[test]
    fn the_executable_is_found() {
        if cfg!(target_arch = "x86_64") {
            assert!(target().expect("found").exists());
        }
    }
}
