use super::*;

fn flags() -> LoadSpec {
    LoadSpec::new(
        FLAGS,
        Some(Fallback {
            duration: Duration::from_secs(10),
            bursts: 10,
        }),
    )
}

fn scenario() -> LoadSpec {
    LoadSpec::new(SCENARIO, None)
}

fn at<T>(value: T, at: usize) -> Option<Given<T>> {
    Some(Given {
        value,
        at: Some(at),
    })
}

#[test]
fn both_sources_follow_the_same_rules() {
    // A rate with a count: an open loop that stops after the count, from either source.
    for mut s in [flags(), scenario()] {
        s.rate = at(1000.0, 3);
        s.count = at(500, 9);
        s.connections = at(20, 1);
        assert_eq!(
            s.build().unwrap(),
            Load {
                model: LoadModel::Open {
                    schedule: Schedule::Constant { rate: 1000.0 },
                    arrival: Arrival::Constant,
                    connections: 20,
                },
                stop: StopRule::Requests(500),
            }
        );
    }
    // Bursts with a count of bursts: size times count requests.
    for mut s in [flags(), scenario()] {
        s.burst = at(4, 0);
        s.bursts = at(3, 5);
        let load = s.build().unwrap();
        assert_eq!(load.stop, StopRule::Requests(12));
        assert_eq!(load.model.connections(), 4);
    }
}

#[test]
fn only_the_fallback_differs_when_no_length_is_given() {
    let mut f = flags();
    f.burst = at(4, 0);
    assert_eq!(f.build().unwrap().stop, StopRule::Requests(40), "10 bursts");
    assert_eq!(
        flags().build().unwrap().stop,
        StopRule::Duration(Duration::from_secs(10))
    );
    let mut s = scenario();
    s.burst = at(4, 0);
    let e = s.build().unwrap_err();
    assert!(e.message.contains("no stop rule"));
    // Bad input: exit 2.
    assert_eq!(crate::util::exit::ExitCode::exit_code(&e), 2);
    assert!(scenario()
        .build()
        .unwrap_err()
        .message
        .contains("no stop rule"));
}

#[test]
fn errors_name_the_value_as_written_and_where() {
    // (set up, the message, where)
    type Case = (fn(&mut LoadSpec), &'static str, &'static str, Option<usize>);
    let cases: &[Case] = &[
        (
            |s| s.connections = at(0, 7),
            "-c/--connections must be at least 1",
            "connections must be at least 1",
            Some(7),
        ),
        (
            |s| {
                s.count = at(5, 1);
                s.duration = at(Duration::from_secs(1), 2)
            },
            "-n/--requests and -d/--duration conflict",
            "count and duration conflict",
            Some(2),
        ),
        (
            |s| {
                s.stages = at(
                    StagesSpec::Rates(vec![(Duration::from_secs(1), 1.0, 2.0)]),
                    1,
                );
                s.rate = at(5.0, 4)
            },
            "--stages and -R/--rate conflict",
            "stages and rate conflict",
            Some(4),
        ),
        (
            |s| {
                s.burst = at(2, 1);
                s.rate = at(5.0, 6)
            },
            "--burst and -R/--rate conflict",
            "burst and rate conflict",
            Some(6),
        ),
        (
            |s| s.bursts = at(2, 8),
            "--bursts applies to bursts: give --burst too",
            "bursts applies to bursts: give burst too",
            Some(8),
        ),
        (
            |s| {
                s.arrival = at(Arrival::Poisson, 3);
                s.count = at(1, 0)
            },
            "--arrival applies to an open loop",
            "arrival applies to an open loop",
            Some(3),
        ),
        (
            |s| {
                s.rate = at(-1.0, 2);
                s.count = at(1, 0)
            },
            "-R/--rate must be more than 0",
            "rate must be more than 0",
            Some(2),
        ),
        (
            |s| {
                s.stages = at(
                    StagesSpec::Connections(vec![(Duration::from_secs(1), 0, 0)]),
                    5,
                )
            },
            "--stages must reach at least 1 connection",
            "stages must reach at least 1 connection",
            Some(5),
        ),
    ];
    for (set, flag_msg, key_msg, where_) in cases {
        for (mut s, want) in [(flags(), flag_msg), (scenario(), key_msg)] {
            set(&mut s);
            let e = s.build().unwrap_err();
            assert!(e.message.contains(want), "{want}: {}", e.message);
            assert_eq!(e.at, *where_, "{want}");
        }
    }
}
