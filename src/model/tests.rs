use super::*;

/// Each of `rows` is written as its name (JSON and `Display`) and read back; `bad` is
/// refused with a message holding each of `says`.
pub(crate) fn written_and_read_by_name<T>(rows: &[(T, &str)], bad: &str, says: &[&str])
where
    T: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Display,
    T: PartialEq + std::fmt::Debug,
{
    for (value, name) in rows {
        let json = serde_json::to_string(value).unwrap();
        assert_eq!(json, format!("\"{name}\""));
        assert_eq!(&serde_json::from_str::<T>(&json).unwrap(), value);
        assert_eq!(value.to_string(), *name);
    }
    let e = serde_json::from_str::<T>(&format!("\"{bad}\""))
        .unwrap_err()
        .to_string();
    for part in says {
        assert!(e.contains(part), "{e}");
    }
}

#[test]
fn a_load_kind_is_written_and_read_as_its_name() {
    written_and_read_by_name(
        &[
            (LoadKind::Closed, "closed"),
            (LoadKind::Open, "open"),
            (LoadKind::Burst, "burst"),
        ],
        "sideways",
        &["unknown load model 'sideways'", "closed, open, burst"],
    );
    let stages = LoadModel::ClosedStages(Vec::new());
    assert_eq!(stages.kind(), LoadKind::Closed);
}

#[test]
fn segments_share_counts_and_interleave_items() {
    // (total, count): the shares add up to the total, and differ by at most one.
    for (total, count) in [(1000, 3), (50, 1), (7, 7), (2, 5), (100_000, 4)] {
        let shares: Vec<u64> = (0..count)
            .map(|index| Segment { index, count }.share(total))
            .collect();
        assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {count}");
        let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
        assert!(hi - lo <= 1, "{shares:?}");
    }
    // Each segment's items, mapped to the whole plan's numbers, cover 0..N once.
    let n = 1000;
    let mut seen = vec![false; n as usize];
    for index in 0..3 {
        let s = Segment { index, count: 3 };
        for k in 0..s.share(n) {
            let g = s.global(k) as usize;
            assert!(!seen[g], "{g} twice");
            seen[g] = true;
        }
    }
    assert!(seen.iter().all(|&x| x));
}
