use super::*;
use crate::util::rng::chi_square;
use std::path::Path;

#[test]
fn uniform_integers_are_flat_and_inclusive() {
    // (low, high, draws, χ² bound): the bounds are the 99.9% points of χ² with
    // high − low degrees of freedom, so a correct sampler passes with any seed but one in
    // a thousand; the seed is fixed, so the test is deterministic.
    let rows: &[(i64, i64, u64, f64)] = &[
        (1, 10, 100_000, 27.88),   // 9 degrees of freedom
        (-3, 3, 70_000, 22.46),    // negatives, 6 degrees of freedom
        (0, 99, 1_000_000, 148.2), // 99 degrees of freedom
    ];
    for &(low, high, draws, bound) in rows {
        let mut gen = GenState::new(7, 0, 1);
        let mut counts = vec![0u64; (high - low + 1) as usize];
        for _ in 0..draws {
            let v = gen.uniform(low, high);
            assert!((low..=high).contains(&v), "{v} outside {low}..={high}");
            counts[(v - low) as usize] += 1;
        }
        let chi = chi_square(&counts);
        assert!(chi < bound, "{low}..={high}: χ² = {chi:.1} ≥ {bound}");
        assert!(counts.iter().all(|&c| c > 0), "both ends are reached");
    }
    // the degenerate and the full ranges
    let mut gen = GenState::new(1, 0, 1);
    assert_eq!(gen.uniform(5, 5), 5);
    let _ = gen.uniform(i64::MIN, i64::MAX);
}

/// H(n, s) = Σ i^(−s), summed from the small terms up.
fn harmonic(n: u64, s: f64) -> f64 {
    (1..=n).rev().map(|i| (i as f64).powf(-s)).sum()
}

#[test]
fn zipf_top_ranks_follow_the_law() {
    // (n, s): around s = 1 the sampler takes its series branches; n = 10⁷ checks that a
    // large range costs no table and still follows the law.
    let rows: &[(u64, f64)] = &[
        (1000, 1.1),       // the usual skew
        (1000, 1.0),       // s = 1: I(x) = ln x
        (1000, 0.8),       // s < 1: a flatter head
        (100, 2.5),        // steep: most draws are rank 1
        (10_000_000, 1.1), // a large key space
    ];
    let draws = 200_000u64;
    for &(n, s) in rows {
        let z = Zipf::new(n, s).unwrap();
        let mut gen = GenState::new(42, 0, 1);
        let mut top = [0u64; 6];
        for _ in 0..draws {
            let k = z.sample(&mut gen);
            assert!((1..=n).contains(&k), "rank {k} outside 1..={n}");
            if k <= 5 {
                top[k as usize] += 1;
            }
        }
        let h = harmonic(n, s);
        for k in 1..=5u64 {
            let p = (k as f64).powf(-s) / h;
            let want = p * draws as f64;
            // 4.5 binomial standard deviations, plus 1% of the figure for rounding.
            let tol = 4.5 * (draws as f64 * p * (1.0 - p)).sqrt() + 0.01 * want;
            let got = top[k as usize] as f64;
            assert!(
                (got - want).abs() <= tol,
                "n={n} s={s} rank {k}: {got} draws, expected {want:.0} ± {tol:.0}"
            );
        }
    }
    // bad parameters are refused
    assert!(Zipf::new(0, 1.1).is_none());
    assert!(Zipf::new(10, 0.0).is_none());
    assert!(Zipf::new(10, f64::NAN).is_none());
}

#[test]
fn pareto_is_bounded_and_heavy_tailed() {
    // (n, shape)
    let rows: &[(u64, f64)] = &[(1_000_000, 1.16), (1000, 0.5), (10, 3.0)];
    let draws = 200_000u64;
    for &(n, shape) in rows {
        let p = Pareto::new(n, shape).unwrap();
        let mut gen = GenState::new(3, 0, 1);
        let (mut ones, mut tail, mut top) = (0u64, 0u64, 0u64);
        let cut = n.div_ceil(10).max(2); // the keys ≥ cut make the upper 90% of the range
        for _ in 0..draws {
            let k = p.sample(&mut gen);
            assert!((1..=n).contains(&k), "key {k} outside 1..={n}");
            ones += (k == 1) as u64;
            tail += (k >= cut) as u64;
            top += (k == n) as u64;
        }
        // P(K = 1) and P(K ≥ cut) = ((cut)^(−α) − (n+1)^(−α)) / mass from the formula.
        let p1 = p.probability(1);
        let pt = ((cut as f64).powf(-shape) - (n as f64 + 1.0).powf(-shape)) / p.mass;
        for (what, got, want) in [("P(1)", ones, p1), ("P(tail)", tail, pt)] {
            let exp = want * draws as f64;
            let tol = 4.5 * (draws as f64 * want * (1.0 - want)).sqrt() + 0.01 * exp;
            assert!(
                (got as f64 - exp).abs() <= tol,
                "n={n} α={shape} {what}: {got}, expected {exp:.0} ± {tol:.0}"
            );
        }
        // heavy-tailed and skewed: key 1 is drawn far more often than the mean key
        assert!(ones as f64 > 5.0 * draws as f64 / n as f64, "n={n}: {ones}");
        // the upper bound is reachable when its probability is not negligible
        if p.probability(n) * draws as f64 > 20.0 {
            assert!(top > 0, "n={n} α={shape}: key n never drawn");
        }
    }
    assert!(Pareto::new(0, 1.0).is_none());
    assert!(Pareto::new(5, -1.0).is_none());
}

#[test]
fn striding_covers_each_number_once() {
    // (process count, threads per process, total): every worker sends share(total) renders;
    // together they produce 0..total, each once.
    let rows: &[(usize, usize, u64)] = &[
        (1, 1, 1000), // one worker: the plain sequence
        (1, 4, 1003), // four threads, a total that does not divide
        (3, 2, 997),  // three processes of two threads
        (2, 8, 5),    // more workers than numbers: some send nothing
    ];
    for &(segments, threads, total) in rows {
        let mut seen = vec![false; total as usize];
        let mut sent = 0;
        for seg in 0..segments {
            for t in 0..threads {
                let (w, workers) = global_worker(seg, segments, t, threads);
                let mut gen = GenState::new(9, w, workers);
                for _ in 0..share(total, w as u64, workers as u64) {
                    let g = gen.next_seq(3);
                    assert!(g < total, "{g} beyond {total}");
                    assert!(!seen[g as usize], "{g} sent twice");
                    seen[g as usize] = true;
                    sent += 1;
                }
            }
        }
        assert_eq!(sent, total, "{segments}×{threads}");
        assert!(
            seen.iter().all(|&s| s),
            "{segments}×{threads}: a number was missed"
        );
    }
}

#[test]
fn workers_streams_are_reproducible_and_distinct() {
    let draw = |seed, w| {
        let mut g = GenState::new(seed, w, 4);
        (0..8).map(|_| g.next_u64()).collect::<Vec<_>>()
    };
    assert_eq!(draw(5, 1), draw(5, 1), "same seed and worker, same stream");
    assert_ne!(draw(5, 1), draw(6, 1), "another seed, another stream");
    let (a, b) = (draw(5, 0), draw(5, 1));
    // not one worker's stream shifted by a draw or two (the trap of seed + w·γ)
    assert!(a.iter().all(|x| !b.contains(x)), "{a:?} {b:?}");
}

#[test]
fn text_bytes_uuid_and_numbers() {
    let mut gen = GenState::new(11, 0, 1);
    let mut out = Vec::new();
    push_random_text(&mut out, 10_000, &mut gen);
    assert_eq!(out.len(), 10_000);
    assert!(out.iter().all(u8::is_ascii_alphanumeric));
    // all 62 characters appear in 10 000 draws (each is missed with probability ~1e-70)
    let mut seen = [false; 256];
    out.iter().for_each(|&b| seen[b as usize] = true);
    assert_eq!(seen.iter().filter(|&&s| s).count(), 62);

    for n in [0, 1, 7, 8, 9, 100] {
        let mut b = Vec::new();
        push_random_bytes(&mut b, n, &mut gen);
        assert_eq!(b.len(), n);
    }

    let mut u = Vec::new();
    push_uuid(&mut u, &mut gen);
    let u = String::from_utf8(u).unwrap();
    let parts: Vec<&str> = u.split('-').collect();
    assert_eq!(
        parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
        [8, 4, 4, 4, 12]
    );
    assert!(parts[2].starts_with('4'), "version 4: {u}");
    assert!(
        matches!(&parts[3][..1], "8" | "9" | "a" | "b"),
        "variant: {u}"
    );

    // (value, text)
    for (v, want) in [
        (0i64, "0"),
        (7, "7"),
        (-42, "-42"),
        (i64::MIN, "-9223372036854775808"),
    ] {
        let mut o = Vec::new();
        push_i64(&mut o, v);
        assert_eq!(o, want.as_bytes());
    }
    let mut o = Vec::new();
    push_u64(&mut o, u64::MAX);
    assert_eq!(o, b"18446744073709551615");
}

#[test]
fn line_files_skip_blanks_and_cycle() {
    let f = LineFile::from_bytes("keys.txt", b"alpha\r\n\nbeta\n  \ngamma");
    assert_eq!(f.len(), 3);
    // (sequence number, line)
    for (seq, want) in [
        (0u64, "alpha"),
        (1, "beta"),
        (2, "gamma"),
        (3, "alpha"),
        (7, "beta"),
    ] {
        assert_eq!(f.line_of(seq), want.as_bytes(), "seq {seq}");
    }
    assert!(LineFile::from_bytes("e", b"\n\n").is_empty());
    let e = LineFile::read(Path::new("/nonexistent/keys.txt"), "keys.txt").unwrap_err();
    assert!(
        e.contains("cannot read data file '/nonexistent/keys.txt'"),
        "{e}"
    );
}
