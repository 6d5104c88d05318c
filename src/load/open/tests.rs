use super::*;

/// Simulates the dispatcher over due times (µs) with a slack and a fixed wake-up lateness
/// (µs): for each wake-up, its time and the due times it released.
fn batches(dues: &[u64], slack: u64, lateness: u64) -> Vec<(u64, Vec<u64>)> {
    batches_of(dues, (slack, 0), lateness)
}

/// As [`batches`], with at most `most` requests a batch (0: no bound).
fn batches_of(dues: &[u64], (slack, most): (u64, usize), lateness: u64) -> Vec<(u64, Vec<u64>)> {
    let t0 = Instant::now();
    let at = |us: u64| t0 + Duration::from_micros(us);
    let mut rest = dues.iter().map(|&d| (at(d), d));
    let mut out = Vec::new();
    let mut pending = rest.next();
    let mut batch = Vec::new();
    while let Some(first) = pending {
        batch.clear();
        let after = gather(
            first,
            (Duration::from_micros(slack), most),
            || rest.next(),
            &mut batch,
        );
        let woke = batch[batch.len() - 1].1 + lateness;
        let mut released: Vec<u64> = batch.iter().map(|b| b.1).collect();
        let room = usize::MAX;
        let (now, release) = (at(woke), |_, d| released.push(d));
        pending = after.and_then(|a| release_due(a, now, room, || rest.next(), release));
        out.push((woke, released));
    }
    out
}

/// Due times (µs), slack (µs), wake-up lateness (µs), and the expected wake-ups: each
/// one's time (µs) and the due times it released.
type Row<'a> = (&'a [u64], u64, u64, &'a [(u64, &'a [u64])]);

#[test]
fn a_wake_up_releases_every_request_due_by_then() {
    let rows: &[Row] = &[
        // No slack, no lateness: one wake-up per request, each on time.
        (&[0, 20, 40], 0, 0, &[(0, &[0]), (20, &[20]), (40, &[40])]),
        // 50 µs slack at one request per 20 µs: 0, 20 and 40 are due within 50 µs of 0
        // and leave together at 40, the last one's due time; then 60, 80, 100 at 100.
        (
            &[0, 20, 40, 60, 80, 100],
            50,
            0,
            &[(40, &[0, 20, 40]), (100, &[60, 80, 100])],
        ),
        // A gap longer than the slack: each request alone, each on time (the slack
        // batches, it does not delay a request with no other to wait for).
        (
            &[0, 100, 200],
            50,
            0,
            &[(0, &[0]), (100, &[100]), (200, &[200])],
        ),
        // A late wake-up (30 µs) takes what fell due meanwhile too: never anything early.
        (&[0, 20, 40, 60], 0, 30, &[(30, &[0, 20]), (70, &[40, 60])]),
        // Requests due at the same instant leave together.
        (&[10, 10, 10], 0, 0, &[(10, &[10, 10, 10])]),
        // Nothing due: no wake-up.
        (&[], 50, 0, &[]),
    ];
    for (i, (dues, slack, late, want)) in rows.iter().enumerate() {
        let want: Vec<(u64, Vec<u64>)> = want.iter().map(|(w, r)| (*w, r.to_vec())).collect();
        assert_eq!(batches(dues, *slack, *late), want, "row {i}");
    }
}

#[test]
fn lateness_is_at_most_the_slack_plus_the_wake_up_s() {
    // One request per 20 µs for 10 ms; (slack µs, wake-up lateness µs) per row.
    let dues: Vec<u64> = (0..500).map(|n| n * 20).collect();
    for (slack, late) in [(0, 0), (10, 0), (50, 3), (100, 17), (1000, 0)] {
        let mut seen = 0;
        for (woke, released) in batches(&dues, slack, late) {
            for due in released {
                assert!(woke >= due, "early: due {due} released {woke}");
                assert!(woke - due <= slack + late, "slack {slack}: {due} at {woke}");
                seen += 1;
            }
        }
        assert_eq!(seen, dues.len(), "every request released once");
    }
}

#[test]
fn a_batch_holds_no_more_requests_than_connections_to_take_them() {
    let dues: Vec<u64> = (0..6).map(|i| i * 20).collect();
    // 2 connections, a slack of 100 µs over requests 20 µs apart: batches of 2, each
    // leaving at its last one's due time, none waiting behind another for a connection.
    assert_eq!(
        batches_of(&dues, (100, 2), 0),
        [(20, vec![0, 20]), (60, vec![40, 60]), (100, vec![80, 100])]
    );
    // Unbounded (0), the slack alone decides: 0..100 leave together, three requests
    // more than two connections can take.
    assert_eq!(
        batches_of(&dues, (100, 0), 0),
        [(100, vec![0, 20, 40, 60, 80, 100])]
    );
    // A late wake-up still releases what fell due meanwhile: those were due.
    assert_eq!(
        batches_of(&dues, (100, 2), 50),
        [(70, vec![0, 20, 40, 60]), (150, vec![80, 100])]
    );
}

#[test]
fn a_late_wake_up_releases_no_more_than_the_room_left() {
    let t0 = Instant::now();
    let at = |us: u64| t0 + Duration::from_micros(us);
    // (room, due times released of 0..=50 µs at 60 µs, the first left)
    for (room, want, left) in [
        (9, vec![0, 10, 20, 30, 40, 50], None),
        (2, vec![0, 10], Some(20)),
    ] {
        let mut rest = (1..6).map(|i| (at(i * 10), i * 10));
        let mut released = Vec::new();
        let first = (at(0), 0);
        let next = release_due(first, at(60), room, || rest.next(), |_, d| released.push(d));
        assert_eq!(released, want, "room {room}");
        assert_eq!(next.map(|n| n.1), left, "room {room}");
    }
}

/// What a run of [`run_behind`] gives: the tickets taken (with their dispatch), the
/// requests counted as not sent, and the most tickets the queue held at once.
type RunBehind = (Vec<(Ticket, Instant)>, u64, usize);

/// A timed open loop of `flags` on one thread whose `takers` connections each take a
/// ticket and hold it for `busy(n)`, n the number of tickets taken before it.
fn run_behind(flags: &[&str], takers: usize, busy: fn(usize) -> Duration) -> RunBehind {
    use crate::cli::{plan::build, Cli, Command};
    use clap::Parser;
    let mut argv = vec!["reqlife", "run", "-t", "1"];
    argv.extend_from_slice(flags);
    let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
        unreachable!()
    };
    let plan = build(&args, "http://127.0.0.1:9/").unwrap();
    let pacer = super::super::thread_pacer(&plan, 0).unwrap();
    let origin = Instant::now();
    let scheduler = Arc::new(Scheduler::new(&plan, origin));
    let queue = Rc::new(OpenQueue::for_takers(takers));
    let taken = Rc::new(std::cell::RefCell::new(Vec::new()));
    let most = Rc::new(Cell::new(0));
    let mut not_sent = 0;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, async {
        for _ in 0..takers {
            let (q, taken, most) = (queue.clone(), taken.clone(), most.clone());
            tokio::task::spawn_local(async move {
                while let Some(t) = q.take().await {
                    most.set(most.get().max(q.len()));
                    let n = taken.borrow().len();
                    taken.borrow_mut().push(t);
                    match busy(n) {
                        // tokio's sleep rounds up to its 1 ms tick: a yield for none.
                        d if d.is_zero() => tokio::task::yield_now().await,
                        d => tokio::time::sleep(d).await,
                    }
                }
            });
        }
        let spun = Rc::new(Cell::new(Duration::ZERO));
        let pacing = Pacing {
            spin: 0.0,
            ..plan.pacing
        };
        not_sent = dispatch(pacer, origin, scheduler, queue.clone(), pacing, spun).await;
    });
    let taken = taken.take();
    (taken, not_sent, most.get())
}

#[test]
fn a_rate_the_connections_cannot_carry_is_counted_not_queued() {
    // 100 million req/s for 50 ms on 2 connections busy 2 ms a request: 5 million due,
    // a hundred or so sent. The queue never holds more than two rounds of tickets (it
    // held every request due, 40 bytes each, growing by the million, before).
    let (taken, not_sent, most) = run_behind(&["-R", "100M", "-d", "50ms"], 2, |_| {
        Duration::from_millis(2)
    });
    assert!(most <= 4, "the queue held {most} tickets");
    // Every request due in the window is sent or counted, once.
    assert_eq!(taken.len() as u64 + not_sent, 5_000_000);
    // Those sent are the schedule's first, in order, each timed from its due time.
    let seqs: Vec<u64> = taken.iter().map(|(t, _)| t.seq).collect();
    assert_eq!(seqs, (0..taken.len() as u64).collect::<Vec<_>>());
    let first = taken[0].0.intended;
    for (t, dispatched) in &taken {
        let ns = (t.intended - first).as_nanos() as i128;
        assert!(
            (ns - 10 * t.seq as i128).abs() <= 1,
            "request {} due at {ns} ns",
            t.seq
        );
        assert!(t.intended <= t.released && t.released <= *dispatched);
    }
}

#[test]
fn behind_its_schedule_a_thread_catches_up_and_never_sends_early() {
    // 1000 req/s for 200 ms on one connection whose first request takes 50 ms, then
    // none: some 50 fall due meanwhile, taken from the schedule as fast as the
    // connection comes free; then the dispatcher times each request again.
    let busy = |n| match n {
        0 => Duration::from_millis(50),
        _ => Duration::ZERO,
    };
    let (taken, not_sent, most) = run_behind(&["-R", "1000", "-d", "200ms"], 1, busy);
    assert_eq!(taken.len() as u64 + not_sent, 200);
    assert!(most <= 2, "{most}");
    let waited = |(t, d): &(Ticket, Instant)| *d - t.intended;
    assert!(
        waited(&taken[1]) >= Duration::from_millis(40),
        "the backlog"
    );
    for (t, dispatched) in &taken {
        assert!(
            t.intended <= t.released && t.released <= *dispatched,
            "never early"
        );
    }
    // Caught up: the backlog's last request waited less than its first.
    let caught = taken.iter().skip(1).take(60).map(waited).min().unwrap();
    assert!(caught < waited(&taken[1]) / 2, "{caught:?}");
}

#[test]
fn the_schedule_given_back_is_taken_back_even_if_its_next_request_fell_due_since() {
    // A run ended by its count (no window's end): a connection finds the next request not
    // yet due, gives the schedule back and waits idle; the dispatcher looks only after that
    // request fell due (the thread was busy meanwhile). It takes the schedule back all the
    // same: the idle connection waits for it to release that request (it waited for ever,
    // the run with it, when the dispatcher judged by the clock whether to take it back).
    use crate::cli::{plan::build, Cli, Command};
    use clap::Parser;
    let argv = ["reqlife", "run", "-t", "1", "-R", "1000", "-n", "10"];
    let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
        unreachable!()
    };
    let plan = build(&args, "http://127.0.0.1:9/").unwrap();
    let origin = Instant::now();
    let due_times = DueTimes {
        pacer: super::super::thread_pacer(&plan, 0).unwrap(),
        origin,
        scheduler: Arc::new(Scheduler::new(&plan, origin)),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, async {
        let queue = Rc::new(OpenQueue::for_takers(1));
        let due = Instant::now() + Duration::from_millis(5);
        let behind = Behind {
            due_times,
            next: Some((due, 7)),
            since: origin,
            until: None,
            given_back: false,
        };
        let q = queue.clone();
        let back = tokio::task::spawn_local(async move { q.fall_behind(behind).await.1 });
        tokio::task::yield_now().await;
        // The connection runs first, then a task that holds the thread past the due time,
        // then the dispatcher it woke (a local set runs its tasks in the order they woke).
        let q = queue.clone();
        let taker = tokio::task::spawn_local(async move { q.take().await.map(|(t, _)| t.seq) });
        tokio::task::spawn_local(async { std::thread::sleep(Duration::from_millis(20)) });
        let next = tokio::time::timeout(Duration::from_secs(2), back).await;
        let next = next
            .expect("the dispatcher took the schedule back")
            .unwrap();
        assert_eq!(next, Some((due, 7)), "from the request given back");
        assert!(Instant::now() > due, "which fell due before it looked");
        queue.close();
        assert_eq!(
            taker.await.unwrap(),
            None,
            "the idle connection was waiting"
        );
    });
}
