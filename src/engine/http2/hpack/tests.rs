//! Unit tests of the HPACK decoder and encoder: RFC 7541 Appendix C, encoder round trips,
//! errors, the Huffman code, and a speed measurement (ignored by default).

use super::*;
use proptest::prelude::*;

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

type Fields = Vec<(String, String)>;

fn decode(d: &mut Decoder, block: &[u8]) -> Result<Fields, HpackError> {
    let mut out = Vec::new();
    d.decode(block, |n, v| {
        out.push((
            String::from_utf8(n.to_vec()).unwrap(),
            String::from_utf8(v.to_vec()).unwrap(),
        ))
    })?;
    Ok(out)
}

fn fields(list: &[(&str, &str)]) -> Fields {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// The dynamic table, newest first, as `name: value` lines.
fn table(d: &Decoder) -> Vec<String> {
    (0..d.table_len())
        .map(|i| {
            let (n, v) = d.table.get(i).unwrap();
            format!(
                "{}: {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            )
        })
        .collect()
}

/// A block in hex, its fields, then the dynamic table's entries (`name: value`, newest first)
/// and size.
type Step<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str], usize);

/// Decodes each step's block in turn on one decoder, checking its fields and table.
fn check_sequence(max: usize, steps: &[Step]) {
    let mut d = Decoder::new(max);
    for (i, (block, want, entries, size)) in steps.iter().enumerate() {
        let got = decode(&mut d, &hex(block)).unwrap_or_else(|e| panic!("step {i}: {e}"));
        assert_eq!(got, fields(want), "step {i}");
        assert_eq!(table(&d), *entries, "step {i}");
        assert_eq!(d.table_size(), *size, "step {i}");
    }
}

#[test]
fn c2_field_representations() {
    check_sequence(
        4096,
        &[(
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            &[("custom-key", "custom-header")],
            &["custom-key: custom-header"],
            55,
        )],
    );
    check_sequence(
        4096,
        &[(
            "040c 2f73 616d 706c 652f 7061 7468",
            &[(":path", "/sample/path")],
            &[],
            0,
        )],
    );
    check_sequence(
        4096,
        &[(
            "1008 7061 7373 776f 7264 0673 6563 7265 74",
            &[("password", "secret")],
            &[],
            0,
        )],
    );
    check_sequence(4096, &[("82", &[(":method", "GET")], &[], 0)]);
}

const REQUEST_1: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQUEST_2: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQUEST_3: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];
const REQUEST_TABLES: [&[&str]; 3] = [
    &[":authority: www.example.com"],
    &["cache-control: no-cache", ":authority: www.example.com"],
    &[
        "custom-key: custom-value",
        "cache-control: no-cache",
        ":authority: www.example.com",
    ],
];

#[test]
fn c3_requests_without_huffman() {
    check_sequence(
        4096,
        &[
            (
                "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                REQUEST_1,
                REQUEST_TABLES[0],
                57,
            ),
            (
                "8286 84be 5808 6e6f 2d63 6163 6865",
                REQUEST_2,
                REQUEST_TABLES[1],
                110,
            ),
            (
                "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                REQUEST_3,
                REQUEST_TABLES[2],
                164,
            ),
        ],
    );
}

#[test]
fn c4_requests_with_huffman() {
    check_sequence(
        4096,
        &[
            (
                "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                REQUEST_1,
                REQUEST_TABLES[0],
                57,
            ),
            (
                "8286 84be 5886 a8eb 1064 9cbf",
                REQUEST_2,
                REQUEST_TABLES[1],
                110,
            ),
            (
                "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                REQUEST_3,
                REQUEST_TABLES[2],
                164,
            ),
        ],
    );
}

const RESPONSE_1: &[(&str, &str)] = &[
    (":status", "302"),
    ("cache-control", "private"),
    ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
    ("location", "https://www.example.com"),
];
const RESPONSE_2: &[(&str, &str)] = &[
    (":status", "307"),
    ("cache-control", "private"),
    ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
    ("location", "https://www.example.com"),
];
const RESPONSE_3: &[(&str, &str)] = &[
    (":status", "200"),
    ("cache-control", "private"),
    ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
    ("location", "https://www.example.com"),
    ("content-encoding", "gzip"),
    (
        "set-cookie",
        "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    ),
];
const RESPONSE_TABLES: [&[&str]; 3] = [
    &[
        "location: https://www.example.com",
        "date: Mon, 21 Oct 2013 20:13:21 GMT",
        "cache-control: private",
        ":status: 302",
    ],
    &[
        ":status: 307",
        "location: https://www.example.com",
        "date: Mon, 21 Oct 2013 20:13:21 GMT",
        "cache-control: private",
    ],
    &[
        "set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
        "content-encoding: gzip",
        "date: Mon, 21 Oct 2013 20:13:22 GMT",
    ],
];

#[test]
fn c5_responses_without_huffman_evict() {
    check_sequence(
        256,
        &[
            (
                "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
                 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
                 6c65 2e63 6f6d",
                RESPONSE_1,
                RESPONSE_TABLES[0],
                222,
            ),
            ("4803 3330 37c1 c0bf", RESPONSE_2, RESPONSE_TABLES[1], 222),
            (
                "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
                 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
                 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
                 3d31",
                RESPONSE_3,
                RESPONSE_TABLES[2],
                215,
            ),
        ],
    );
}

#[test]
fn c6_responses_with_huffman_evict() {
    check_sequence(
        256,
        &[
            (
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                RESPONSE_1,
                RESPONSE_TABLES[0],
                222,
            ),
            ("4883 640e ffc1 c0bf", RESPONSE_2, RESPONSE_TABLES[1], 222),
            (
                "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
                RESPONSE_3,
                RESPONSE_TABLES[2],
                215,
            ),
        ],
    );
}

#[test]
fn size_updates_resize_and_evict() {
    let mut d = Decoder::new(4096);
    decode(&mut d, &hex("400a 6375 7374 6f6d 2d6b 6579 0161")).unwrap();
    assert_eq!(d.table_size(), 43);
    // Two updates at the start (to 0, then 100): the entry is gone, the table usable.
    let got = decode(&mut d, &hex("20 3f45 82")).unwrap();
    assert_eq!(got, fields(&[(":method", "GET")]));
    assert_eq!((d.table_len(), d.table.capacity()), (0, 100));
    // The largest allowed: 4096 = 31 + 97 + 31 * 128.
    decode(&mut d, &hex("3f e11f")).unwrap();
    assert_eq!(d.table.capacity(), 4096);
    // An entry larger than the table empties it and is not added.
    let mut d = Decoder::new(40);
    decode(&mut d, &hex("4001 6101 62")).unwrap();
    assert_eq!(d.table_size(), 34);
    let got = decode(&mut d, &hex("4001 6308 6464 6464 6464 6464")).unwrap();
    assert_eq!(got, fields(&[("c", "dddddddd")]));
    assert_eq!((d.table_len(), d.table_size()), (0, 0));
    assert_eq!(decode(&mut d, &hex("be")), Err(HpackError::BadIndex(62)));
}

#[test]
fn indexed_names_survive_their_own_eviction() {
    // A literal whose name is the dynamic entry its insertion evicts (section 4.4).
    let mut d = Decoder::new(70);
    decode(&mut d, &hex("400a 6375 7374 6f6d 2d6b 6579 0161")).unwrap();
    let got = decode(&mut d, &hex("7e 0462 6262 62")).unwrap();
    assert_eq!(got, fields(&[("custom-key", "bbbb")]));
    assert_eq!(table(&d), ["custom-key: bbbb"]);
}

#[test]
fn errors_are_values() {
    let cases: &[(usize, &str, HpackError)] = &[
        (4096, "ff", HpackError::Truncated),
        (4096, "ff 80", HpackError::Truncated),
        (4096, "1f", HpackError::Truncated),
        (4096, "40", HpackError::Truncated),
        (4096, "4005 6162", HpackError::Truncated),
        (4096, "0405 6162", HpackError::Truncated),
        (4096, "0001 61", HpackError::Truncated),
        (4096, "0001 617f", HpackError::Truncated),
        (4096, "80", HpackError::BadIndex(0)),
        (4096, "be", HpackError::BadIndex(62)),
        (4096, "ff 80 01", HpackError::BadIndex(255)),
        (4096, "7f 00 00", HpackError::BadIndex(63)),
        (4096, "ff 8080 8080 8001", HpackError::IntegerOverflow),
        (
            4096,
            "0f ffff ffff ffff ffff ff7f",
            HpackError::IntegerOverflow,
        ),
        (4096, "3f e21f", HpackError::TableSizeUpdate(4097)),
        (0, "21", HpackError::TableSizeUpdate(1)),
        (4096, "82 20", HpackError::LateSizeUpdate),
        // 'a' (00011) then three zeros, not ones.
        (4096, "0481 18", HpackError::BadHuffman),
        // 'a' then 11 bits of ones: padding of 8 bits or more.
        (4096, "0482 1fff", HpackError::BadHuffman),
        // A lone byte of ones: all padding, 8 bits.
        (4096, "0481 ff", HpackError::BadHuffman),
        // 30 ones: EOS.
        (4096, "0484 ffff ffff", HpackError::HuffmanEos),
        // 'a', then EOS, then padding.
        (4096, "0485 1fff ffff fe", HpackError::HuffmanEos),
    ];
    for (max, block, want) in cases {
        let mut d = Decoder::new(*max);
        assert_eq!(decode(&mut d, &hex(block)), Err(want.clone()), "{block}");
        assert!(!want.to_string().is_empty());
    }
}

#[test]
fn huffman_padding_up_to_seven_ones_is_accepted() {
    let mut d = Decoder::new(4096);
    // 'a' (00011) + 3 ones; '0' (00000) + 'a' + 6 ones; empty.
    let got = decode(&mut d, &hex("0481 1f 0482 00ff 0480")).unwrap();
    assert_eq!(
        got,
        fields(&[(":path", "a"), (":path", "0a"), (":path", "")])
    );
}

#[test]
fn every_byte_value_decodes_from_its_code() {
    let h = huffman::tables();
    for b in 0..=255u8 {
        let mut coded = Vec::new();
        huffman::encode(&[b], &mut coded);
        assert_eq!(coded.len() as u32, huffman::length(b.into()).div_ceil(8));
        let mut out = vec![9];
        let end = h.decode(&coded, &mut out, 1).unwrap();
        assert_eq!(out[..end], [9, b], "byte {b}");
        // The same byte many times: codes at every bit offset.
        let long = vec![b; 37];
        coded.clear();
        huffman::encode(&long, &mut coded);
        let end = h.decode(&coded, &mut out, 0).unwrap();
        assert_eq!(out[..end], long, "byte {b} repeated");
    }
}

#[test]
fn the_huffman_code_is_appendix_b() {
    // A few codes as printed in RFC 7541 Appendix B (code, length).
    let known: &[(usize, u32, u32)] = &[
        (b' ' as usize, 0x14, 6),
        (b'0' as usize, 0x0, 5),
        (b'a' as usize, 0x3, 5),
        (b'z' as usize, 0x7b, 7),
        (b'~' as usize, 0x1ffd, 13),
        (0, 0x1ff8, 13),
        (10, 0x3ffffffc, 30),
        (255, 0x3ffffee, 26),
        (256, 0x3fffffff, 30),
    ];
    for &(sym, code, len) in known {
        assert_eq!((huffman::CODES[sym], huffman::length(sym)), (code, len));
    }
    // A complete prefix code: the Kraft sum is exactly 1.
    let kraft: u64 = (0..257).map(|s| 1u64 << (30 - huffman::length(s))).sum();
    assert_eq!(kraft, 1 << 30);
}

#[test]
fn the_static_lookup_finds_every_entry() {
    for (i, (name, value)) in table::STATIC.iter().enumerate() {
        let first = table::STATIC.iter().position(|e| e.0 == *name).unwrap() + 1;
        assert_eq!(table::find_static(name, value), (Some(i + 1), Some(first)));
    }
    assert_eq!(table::find_static(b"date", b"x"), (None, Some(33)));
    assert_eq!(table::find_static(b":status", b"201"), (None, Some(8)));
    assert_eq!(table::find_static(b"x-date", b""), (None, None));
    assert_eq!(table::find_static(b"Date", b""), (None, None));
}

/// Encodes `list` with `e` and decodes the block with `d`: the block, and the fields back.
fn round_trip(e: &mut Encoder, d: &mut Decoder, list: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    e.encode(
        list.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
        &mut block,
    );
    assert_eq!(decode(d, &block).unwrap(), fields(list));
    block
}

const GET: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "example.com:8443"),
    (":path", "/api/items?id=1"),
    ("user-agent", "reqlife/0.1"),
    ("accept", "*/*"),
    ("x-trace", "abc"),
];

#[test]
fn the_encoder_indexes_what_repeats() {
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let first = round_trip(&mut e, &mut d, GET);
    // :authority, user-agent, accept, x-trace; not :path.
    assert_eq!(e.inserted(), 4);
    let second = round_trip(&mut e, &mut d, GET);
    assert_eq!(e.inserted(), 4);
    assert!(second.len() * 2 < first.len(), "{second:?} vs {first:?}");
    // Static full matches and inserted entries are one byte each; :path a literal.
    let path = "/api/items?id=1".len();
    assert_eq!(second.len(), 6 + 2 + path);
    let third = round_trip(&mut e, &mut d, GET);
    assert_eq!(third, second);
    assert_eq!(e.inserted(), 4);
    assert_eq!(d.table_len(), 4);
}

#[test]
fn a_changing_path_is_never_inserted() {
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    for i in 0..20 {
        let path = format!("/item/{i}");
        round_trip(
            &mut e,
            &mut d,
            &[(":method", "GET"), (":path", &path), (":path", "/")],
        );
    }
    assert_eq!((e.inserted(), d.table_len()), (0, 0));
}

#[test]
fn a_full_table_stops_inserting() {
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let value = "v".repeat(967); // 1000 bytes an entry with a one-byte name
    let names = ["a", "b", "c", "d", "e"];
    for name in names {
        round_trip(&mut e, &mut d, &[(name, &value)]);
    }
    assert_eq!(e.inserted(), 4);
    assert_eq!((d.table_len(), d.table_size()), (4, 4000));
    // The fifth stays a literal: sent whole each time, nothing evicted.
    let block = round_trip(&mut e, &mut d, &[("e", &value), ("a", &value)]);
    assert_eq!(block.len(), 1 + 1 + 1 + 3 + 967 + 1);
    assert_eq!(e.inserted(), 4);
    // Smaller fields still fit in the 96 bytes left.
    round_trip(&mut e, &mut d, &[("f", "x")]);
    assert_eq!(e.inserted(), 5);
}

#[test]
fn a_lower_table_size_empties_the_encoder_table() {
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    round_trip(&mut e, &mut d, GET);
    assert!(d.table_size() > 100);
    // The peer now allows 100 bytes; its decoder is new to show the block needs nothing else.
    e.set_max_table_size(100);
    let mut d = Decoder::new(100);
    let block = round_trip(&mut e, &mut d, GET);
    // Updates to 0 and 100 (31 + 69), then the fields.
    assert_eq!(block[..3], [0x20, 0x3f, 0x45]);
    assert!(d.table_size() <= 100);
    let again = round_trip(&mut e, &mut d, GET);
    assert!(again.len() < block.len());
    // Lower but above what the table holds: one update, entries kept.
    let held = d.table_size();
    assert_eq!(held, 99);
    e.set_max_table_size(99);
    let block = round_trip(&mut e, &mut d, GET);
    assert_eq!(block[..3], [0x3f, 0x44, 0x82]);
    assert_eq!(d.table_size(), held);
    // Higher again (for a decoder that allows it): the encoder says so and uses it, up to
    // 4096.
    let (mut e, mut d) = (Encoder::new(), Decoder::new(4096));
    round_trip(&mut e, &mut d, GET);
    e.set_max_table_size(100);
    round_trip(&mut e, &mut d, GET);
    let before = e.inserted();
    e.set_max_table_size(1 << 20);
    let block = round_trip(&mut e, &mut d, GET);
    assert_eq!(block[..3], [0x3f, 0xe1, 0x1f]);
    assert_eq!(e.inserted(), before + 2);
    // No change: no update.
    e.set_max_table_size(8192);
    let block = round_trip(&mut e, &mut d, GET);
    assert_eq!(block[0], 0x82);
}

#[test]
fn a_reused_table_buffer_serves_longer_entries() {
    let mut d = Decoder::new(100);
    let mut e = Encoder::new();
    e.set_max_table_size(100);
    for i in 0..30 {
        let value = "x".repeat(i % 7 * 9);
        let mut block = Vec::new();
        e.encode([(b"k".as_slice(), value.as_bytes())], &mut block);
        assert_eq!(decode(&mut d, &block).unwrap(), fields(&[("k", &value)]));
        // A fresh encoder each time: literals with indexing, evicting on the decoder's side.
        e = Encoder::new();
        e.set_max_table_size(100);
    }
    assert!(d.table_size() <= 100);
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

/// A name: one of the static table's, one of a few others, or any bytes.
fn name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (0..61usize).prop_map(|i| table::STATIC[i].0.to_vec()),
        prop::sample::select(vec![&b"x-a"[..], b"x-b", b":path"]).prop_map(|n| n.to_vec()),
        bytes(20),
    ]
}

/// A value: one of the static table's, one of a few others, or any bytes.
fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (0..61usize).prop_map(|i| table::STATIC[i].1.to_vec()),
        prop::sample::select(vec![&b"1"[..], b"22", b""]).prop_map(|v| v.to_vec()),
        bytes(300),
    ]
}

proptest! {
    #[test]
    fn encoded_blocks_decode_to_their_fields(
        blocks in proptest::collection::vec(
            (proptest::collection::vec((name(), value()), 0..10), prop::option::of(0usize..5000)),
            1..8,
        ),
    ) {
        let mut e = Encoder::new();
        let mut d = Decoder::new(4096);
        let mut block = Vec::new();
        for (list, size) in &blocks {
            if let Some(size) = size {
                e.set_max_table_size(*size);
            }
            block.clear();
            e.encode(list.iter().map(|(n, v)| (n.as_slice(), v.as_slice())), &mut block);
            let mut got = Vec::new();
            d.decode(&block, |n, v| got.push((n.to_vec(), v.to_vec()))).unwrap();
            prop_assert_eq!(&got, list);
            prop_assert_eq!(d.table_size(), e.table.size());
        }
    }

    #[test]
    fn huffman_strings_round_trip(s in bytes(200)) {
        let mut coded = Vec::new();
        huffman::encode(&s, &mut coded);
        let mut out = Vec::new();
        let end = huffman::tables().decode(&coded, &mut out, 0).unwrap();
        prop_assert_eq!(&out[..end], &s[..]);
    }

    #[test]
    fn huffman_decoding_any_bytes_returns(s in bytes(40)) {
        let mut out = Vec::new();
        let _ = huffman::tables().decode(&s, &mut out, 0);
    }

    // Any bytes: fuzz/fuzz_targets/hpack.rs. What random bytes seldom reach, blocks of valid
    // representations, comes from encoding fields here.
    #[test]
    fn any_blocks_decode_without_panic(
        max in any::<u8>(),
        blocks in proptest::collection::vec(bytes(60), 0..6),
        lists in proptest::collection::vec(proptest::collection::vec((name(), value()), 0..6), 0..4),
        cut in any::<usize>(),
    ) {
        let mut data = vec![max];
        let mut e = Encoder::new();
        for list in &lists {
            let mut block = Vec::new();
            e.encode(list.iter().map(|(n, v)| (n.as_slice(), v.as_slice())), &mut block);
            // Truncated somewhere, and its length in one byte.
            block.truncate((cut % (block.len() + 1)).min(255));
            data.push(block.len() as u8);
            data.extend_from_slice(&block);
        }
        for b in &blocks {
            data.push(b.len() as u8);
            data.extend_from_slice(b);
        }
        decode_any(&data);
    }
}

#[test]
fn a_repeated_block_is_replayed_with_its_insertions_and_one_that_refers_to_the_table_is_not() {
    // nginx's way: literals with incremental indexing, never referred to. Decoded four times
    // on one decoder (replayed from the second), they give what a fresh decoder gives each
    // time, and the table holds the same entries.
    let mut block = vec![0x88];
    for (index, value) in [(54, &b"nginx"[..]), (33, b"Tue, 08 Apr 2025 12:34:56 GMT")] {
        put_integer(&mut block, 0x40, 6, index);
        let mut coded = Vec::new();
        huffman::encode(value, &mut coded);
        put_integer(&mut block, 0x80, 7, coded.len());
        block.extend_from_slice(&coded);
    }
    let mut once = Decoder::new(4096);
    let first = decode(&mut once, &block).unwrap();
    assert_eq!(first.len(), 3);
    let mut replayed = Decoder::new(4096);
    let mut fresh = Decoder::new(4096);
    for round in 0..4 {
        assert_eq!(
            decode(&mut replayed, &block).unwrap(),
            first,
            "round {round}"
        );
        // What the table would hold without the replay: decoded fields pushed the slow way.
        decode(&mut fresh, &block).unwrap();
        fresh.replay.valid = false;
        assert_eq!(table(&replayed), table(&fresh), "round {round}");
        assert_eq!(replayed.table_size(), fresh.table_size());
    }
    assert_eq!(replayed.table_len(), 8);
    // A block that refers to the newest dynamic entry is decoded anew each time: the entry
    // it names changes as other blocks add to the table.
    let mut d = Decoder::new(4096);
    let add = |v: &str| {
        let mut b = vec![0x40, 1, b'x'];
        put_integer(&mut b, 0, 7, v.len());
        b.extend_from_slice(v.as_bytes());
        b
    };
    decode(&mut d, &add("1")).unwrap();
    let newest = [0xbe]; // index 62: the dynamic table's first entry
    assert_eq!(decode(&mut d, &newest).unwrap(), fields(&[("x", "1")]));
    decode(&mut d, &add("2")).unwrap();
    assert_eq!(decode(&mut d, &newest).unwrap(), fields(&[("x", "2")]));
    // Size updates are not replayed either: the second time they must empty the table again
    // (to 0, back to 4096, then one entry).
    let mut d = Decoder::new(4096);
    let update = [0x20, 0x3f, 0xe1, 0x1f, 0x40, 1, b'y', 1, b'z'];
    decode(&mut d, &update).unwrap();
    decode(&mut d, &update).unwrap();
    assert_eq!(table(&d), ["y: z"]);
}

#[test]
fn a_literal_never_enters_either_table() {
    // A block, then the same block with a field that changes per request (a trace id) as a
    // literal: the decoder reads it, and neither table grows for it.
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let common: [(&[u8], &[u8]); 2] = [(b":method", b"GET"), (b"user-agent", b"reqlife")];
    for id in ["00-aa-01", "00-bb-01", "00-cc-00"] {
        let mut block = Vec::new();
        e.encode(common, &mut block);
        let inserted = e.inserted();
        e.literal(b"traceparent", id.as_bytes(), &mut block);
        e.literal(b"tracestate", b"vendor=x", &mut block);
        assert_eq!(e.inserted(), inserted, "a literal was inserted");
        let got = decode(&mut d, &block).unwrap();
        assert_eq!(
            got,
            fields(&[
                (":method", "GET"),
                ("user-agent", "reqlife"),
                ("traceparent", id),
                ("tracestate", "vendor=x"),
            ])
        );
        assert_eq!(d.table_len(), 1, "only user-agent in the decoder's table");
    }
}
