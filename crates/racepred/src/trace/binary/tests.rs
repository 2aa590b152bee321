//! The binary format's tests: round trips, version 1 files, and malformed input, which the
//! reader must refuse without panicking.

use super::*;
use crate::trace::Trace;

fn encode(t: &Trace) -> Vec<u8> {
    let mut w = BinaryWriter::new(Vec::new());
    let mut src = t.source();
    while let Some(ev) = src.next_event().unwrap() {
        w.write_event(&ev, src.names(), src.addresses(), src.seq())
            .unwrap();
    }
    w.finish().unwrap()
}

fn decode(b: &[u8]) -> Result<Trace> {
    Trace::read_from(&mut BinaryReader::from_buf_read(b)?)
}

fn sample() -> Trace {
    let text = "T0|fork(T1)|10\nT1|acq(L0)|11\nT1|mbegin(m;a,b)|12\nT1|mend(m)|13\nT1|begin|14\nT1|end(x)|15\nT1|rel(L0)|16\nT0|r(V3)|14\nT0|join(T1)|15\n";
    Trace::read_from(&mut crate::trace::std_format::StdReader::new(
        text.as_bytes(),
    ))
    .unwrap()
}

#[test]
fn round_trip_small() {
    let t = sample();
    let b = encode(&t);
    let u = decode(&b).unwrap();
    assert_eq!(u.events, t.events);
    assert_eq!(
        u.names.addrs.iter().collect::<Vec<_>>(),
        t.names.addrs.iter().collect::<Vec<_>>()
    );
    assert_eq!(u.addresses(2), t.addresses(2));
    assert!(u.seq.is_none());
}

#[test]
fn every_prefix_is_an_error_not_a_panic() {
    let b = encode(&sample());
    for k in 0..b.len() {
        let r = decode(&b[..k]);
        let e = r.expect_err("prefix must not read as a complete trace");
        assert!(
            matches!(e.kind(), ErrorKind::Truncated(_)),
            "prefix {k}: {e}"
        );
    }
    assert!(decode(&b).is_ok());
}

/// Events, their side data and the position after each block, read with `read_block`
/// (blocks of `max`) or, for `max == 0`, one `next_event` at a time.
fn blocks(b: &[u8], max: usize) -> Vec<String> {
    let mut r = BinaryReader::from_buf_read(b).unwrap();
    let mut out = Vec::new();
    if max == 0 {
        while let Some(ev) = r.next_event().unwrap() {
            out.push(format!("{ev:?} {:?} {:?}", r.addresses(), r.seq()));
        }
    } else {
        let mut blk = EventBlock::new();
        while r.read_block(&mut blk, max).unwrap() {
            for i in 0..blk.len() {
                out.push(format!(
                    "{:?} {:?} {:?}",
                    blk.events[i],
                    blk.side(i).0,
                    blk.side(i).1
                ));
            }
            let last = blk.len() - 1;
            assert_eq!(r.position().event, Some(out.len() as u64 - 1));
            assert_eq!(r.addresses(), blk.side(last).0);
        }
    }
    out
}

#[test]
fn blocks_equal_events() {
    // Several binary blocks, with mbegins (address sets) in every block or only in the
    // second (the others plain: `read_block` hands their vectors over whole), with and
    // without access numbers.
    let every = |i: usize| i % 1000 == 999;
    let second = |i: usize| (5000..5003).contains(&i);
    for mbegin_at in [&every as &dyn Fn(usize) -> bool, &second] {
        let mut text = String::new();
        for i in 0..3 * BLOCK_EVENTS + 17 {
            if mbegin_at(i) {
                text.push_str(&format!("T0|mbegin(m;a{},b)|{i}\n", i % 3));
            } else {
                text.push_str(&format!("T0|w(V{})|{}\n", i % 50, i % 7));
            }
        }
        let t = Trace::read_from(&mut crate::trace::std_format::StdReader::new(
            text.as_bytes(),
        ))
        .unwrap();
        let mut with_seq = t.clone();
        with_seq.seq = Some((0..t.len() as u64).map(|i| 2 * i).collect());
        for t in [t, with_seq] {
            let b = encode(&t);
            let one = blocks(&b, 0);
            assert_eq!(one.len(), t.len());
            for max in [1, 7, 1000, 4096, 10_000] {
                assert_eq!(one, blocks(&b, max), "blocks of {max}");
            }
        }
    }
}

/// `next_event` and `read_block` calls mixed, after a block handed over whole and
/// before one: the same events in order, the same positions, the end record's count
/// checked (it counts the handed-over events too).
#[test]
fn events_and_blocks_mix() {
    let t = Trace::from_events(
        (0..3 * BLOCK_EVENTS as u32 + 5)
            .map(|i| Event::write(i % 3, i % 11))
            .collect(),
    );
    let b = encode(&t);
    let mut r = BinaryReader::from_buf_read(&b[..]).unwrap();
    let mut blk = EventBlock::new();
    let mut got = Vec::new();
    let mut step = 0;
    loop {
        let more = match step % 3 {
            0 => {
                let more = r.read_block(&mut blk, 2 * BLOCK_EVENTS).unwrap();
                got.extend_from_slice(&blk.events);
                more
            }
            _ => match r.next_event().unwrap() {
                Some(ev) => {
                    got.push(ev);
                    true
                }
                None => false,
            },
        };
        if !more {
            break;
        }
        assert_eq!(
            r.position().event,
            Some(got.len() as u64 - 1),
            "step {step}"
        );
        step += 1;
    }
    assert_eq!(got, t.events);
    assert!(!r.read_block(&mut blk, 10).unwrap());
}

#[test]
fn seq_round_trips() {
    let mut t = Trace::from_events(vec![Event::write(0, 0), Event::read(1, 0)]);
    t.seq = Some(vec![7, 9]);
    let u = decode(&encode(&t)).unwrap();
    assert_eq!(u.seq, Some(vec![7, 9]));
}

#[test]
fn header_errors() {
    let e = decode(b"NOTRACEPRED.....").unwrap_err();
    assert!(e.to_string().contains("magic"), "{e}");
    let mut b = encode(&sample());
    b[8] = 9;
    let e = decode(&b).unwrap_err();
    assert!(e.to_string().contains("unsupported version 9"), "{e}");
    assert!(e.to_string().contains("byte 8"), "{e}");
}

/// A version 1 file (the format before the compact events): `encode`'s events and names
/// written the version 1 way.
fn encode_v1(t: &Trace) -> Vec<u8> {
    let mut b = b"RACEPRED\x01\0\0\0\0\0\0\0".to_vec();
    for (kind, table) in NameKind::ALL.iter().map(|&k| (k, t.names.table(k))) {
        assert!(table.is_empty() || kind == NameKind::Thread || kind == NameKind::Var);
    }
    let mut defined = [0u32; 2];
    let mut name = |b: &mut Vec<u8>, kind: NameKind, id: u32| {
        while defined[kind as usize] <= id {
            let n = t.names.table(kind).name(defined[kind as usize]);
            b.extend_from_slice(&[TAG_NAME, kind as u8]);
            b.extend_from_slice(&(n.len() as u32).to_le_bytes());
            b.extend_from_slice(n.as_bytes());
            defined[kind as usize] += 1;
        }
    };
    for chunk in t.events.chunks(3) {
        for ev in chunk {
            name(&mut b, NameKind::Thread, ev.thread.0);
            name(&mut b, NameKind::Var, ev.target);
        }
        b.extend_from_slice(&[TAG_BLOCK, 0, 0, 0]);
        b.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        for ev in chunk {
            b.extend_from_slice(&ev.thread.0.to_le_bytes());
            b.extend_from_slice(&ev.target.to_le_bytes());
            b.extend_from_slice(&ev.loc.0.to_le_bytes());
            b.extend_from_slice(&[ev.op as u8, 0, 0, 0]);
        }
    }
    b.extend_from_slice(&[TAG_END, 0, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(&(t.len() as u64).to_le_bytes());
    b
}

/// Version 1 files still read, with their events' byte offsets in errors.
#[test]
fn version_1_reads() {
    let t = Trace::from_events((0..10u32).map(|i| Event::write(i % 2, i % 4)).collect());
    let b = encode_v1(&t);
    let u = decode(&b).unwrap();
    assert_eq!(u.events, t.events);
    assert_eq!(
        u.names.vars.iter().collect::<Vec<_>>(),
        ["V0", "V1", "V2", "V3"]
    );
    let mut r = BinaryReader::from_buf_read(&b[..]).unwrap();
    r.next_event().unwrap();
    r.next_event().unwrap();
    let first = 16 + b[16..].iter().position(|&c| c == TAG_BLOCK).unwrap() as u64 + 12;
    assert_eq!(r.position().byte, first + 16);
}

#[test]
fn zigzag_round_trips() {
    for d in [
        0u32,
        1,
        2,
        u32::MAX,
        u32::MAX - 1,
        1 << 31,
        (1 << 31) - 1,
        0x80,
        0xffff,
    ] {
        assert_eq!(unzigzag(zigzag(d)), d);
    }
    assert_eq!([0, u32::MAX, 1, u32::MAX - 1].map(zigzag), [0, 1, 2, 3]);
    assert_eq!(
        [0, 1, 0xff, 0x100, 0xffff, 0x10000].map(width_code),
        [0, 1, 1, 2, 2, 3]
    );
}

/// A version 2 block whose data is longer or shorter than its events use, or whose
/// control words have reserved bits set, is an error at the right byte.
#[test]
fn version_2_block_errors() {
    let t = Trace::from_events(vec![Event::write(0, 0), Event::read(0, 1)]);
    let b = encode(&t);
    let blk = 16 + b[16..].iter().position(|&c| c == TAG_BLOCK).unwrap();
    let data_len = blk + 12;
    // The first event's target (0, predicted 1) and location (none, predicted 0) take a
    // byte each; the second is predicted exactly.
    assert_eq!(b[data_len], 2);
    // Reserved control bits of the second event.
    let mut c = b.clone();
    c[blk + 16 + 3] = 0x80;
    let e = decode(&c).unwrap_err().to_string();
    assert!(e.contains("bits 10-15 not zero"), "{e}");
    assert!(e.contains(&format!("byte {}", blk + 16 + 2)), "{e}");
    // A width claiming data the block does not hold.
    let mut c = b.clone();
    c[blk + 16 + 1] |= 0x03; // the first event's location in 4 bytes
    let e = decode(&c).unwrap_err().to_string();
    assert!(e.contains("bytes of data"), "{e}");
}

proptest::proptest! {
    /// Any ids, including absent ones and jumps of every width, round-trip through the
    /// compact events, with and without access numbers.
    #[test]
    fn compact_events_round_trip(
        events in proptest::collection::vec(
            (0u32..3, proptest::sample::select(vec![0u32, 1, 2, 255, 256, 70_000, u32::MAX]),
             0usize..3, 0u8..4, proptest::option::of(0u64..5)),
            0..300),
    ) {
        let mut names = Names::new();
        for i in 0..3 {
            names.threads.intern(format!("T{i}").as_bytes());
        }
        let mut w = BinaryWriter::new(Vec::new());
        let mut want = Vec::new();
        let mut seqs = Vec::new();
        for &(thread, jump, loc, op, seq) in &events {
            // A variable id: consecutive, repeated or jumping (by name, as the writer
            // renumbers in order of first use).
            let v = names.vars.intern(format!("v{jump}").as_bytes());
            let loc = match loc {
                0 => LocId::NONE,
                k => LocId(names.locs.intern(format!("l{}", k + jump as usize % 5).as_bytes())),
            };
            let op = [Op::Read, Op::Write, Op::Begin, Op::End][op as usize];
            let target = if matches!(op, Op::Begin | Op::End) && jump == 0 { u32::MAX } else { v };
            let target = if matches!(op, Op::Begin | Op::End) && target != u32::MAX {
                names.methods.intern(format!("m{jump}").as_bytes())
            } else {
                target
            };
            let ev = Event::new(ThreadId(thread), op, target, loc);
            w.write_event(&ev, &names, &[], seq).unwrap();
            want.push(ev);
            seqs.push(seq);
        }
        let b = w.finish().unwrap();
        let mut r = BinaryReader::from_buf_read(&b[..]).unwrap();
        let mut i = 0;
        while let Some(ev) = r.next_event().unwrap() {
            let src = &want[i];
            let name = |k: NameKind, id: u32, n: &Names| (id != u32::MAX).then(|| n.table(k).name(id).to_string());
            proptest::prop_assert_eq!(ev.op, src.op);
            proptest::prop_assert_eq!(name(NameKind::Thread, ev.thread.0, r.names()), name(NameKind::Thread, src.thread.0, &names));
            proptest::prop_assert_eq!(name(ev.op.target_kind(), ev.target, r.names()), name(src.op.target_kind(), src.target, &names));
            proptest::prop_assert_eq!(name(NameKind::Loc, ev.loc.0, r.names()), name(NameKind::Loc, src.loc.0, &names));
            proptest::prop_assert_eq!(r.seq(), seqs[i]);
            i += 1;
        }
        proptest::prop_assert_eq!(i, want.len());
    }

    /// `decode_block`'s word-wise checks accept a block exactly when the obvious
    /// per-field checks (`event_ok`) accept every event: ids at, below and above each
    /// table's limit, absent targets and locations, every operation code and padding.
    #[test]
    fn block_checks_agree_with_field_checks(
        lim in proptest::array::uniform7(1u32..6),
        events in proptest::collection::vec(
            // Each field valid most of the time (so that a block's one bad field decides),
            // its edge cases the rest: the limit itself, the limit - 1, absent (`u32::MAX`).
            (0usize..12, 0usize..12, 0usize..12, 0u8..16,
             proptest::sample::select(vec![[0u8; 3], [0; 3], [0; 3], [0; 3], [0, 0, 1], [1, 0, 0]])),
            1..4),
    ) {
        let pick = |lim: u32, c: usize| match c {
            0 => lim,
            1 => u32::MAX,
            2 => u32::MAX - 1,
            3 => lim - 1,
            _ => (c as u32) % lim,
        };
        let events: Vec<(u32, u32, u32, u8, [u8; 3])> = events
            .into_iter()
            .map(|(t, x, l, op, pad)| {
                let kind = Op::from_u8(op).map_or(NameKind::Var, |o| o.target_kind());
                let op = if op >= 14 && t % 2 == 0 { op % 14 } else { op };
                (
                    pick(lim[NameKind::Thread as usize], t),
                    pick(lim[kind as usize], x),
                    pick(lim[NameKind::Loc as usize], l),
                    op,
                    pad,
                )
            })
            .collect();
        let mut raw = Vec::new();
        for &(thread, target, loc, op, pad) in &events {
            raw.extend_from_slice(&thread.to_le_bytes());
            raw.extend_from_slice(&target.to_le_bytes());
            raw.extend_from_slice(&loc.to_le_bytes());
            raw.push(op);
            raw.extend_from_slice(&pad);
        }
        let shape = Shape { n: events.len(), has_seq: false, addr_words: 0, data_len: None };
        let mut out = Block::default();
        let ok = raw.chunks_exact(16).all(|c| event_ok(c, &lim));
        let mbegins = raw.chunks_exact(16).any(|c| c[12] == Op::MethodBegin as u8);
        let r = decode_block(&raw, shape, &lim, 0, 0, &mut out);
        // (An accepted block with mbegins then needs address data, which this one lacks.)
        proptest::prop_assert_eq!(r.is_ok(), ok && !mbegins, "{:?}", r.err().map(|e| e.to_string()));
        if ok && !mbegins {
            for (ev, &(thread, target, loc, op, _)) in out.events.iter().zip(&events) {
                proptest::prop_assert_eq!(
                    (ev.thread.0, ev.target, ev.loc.0, ev.op as u8),
                    (thread, target, loc, op)
                );
            }
        }
    }
}
