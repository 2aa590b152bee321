//! The binary reader over arbitrary bytes (and over the same bytes behind a valid header):
//! never a panic, every id it returns is defined, and a trace it accepts writes back and
//! reads back to the same events.
#![no_main]

use libfuzzer_sys::fuzz_target;
use racepred::trace::binary::{BinaryReader, BinaryWriter};
use racepred::trace::{EventSource, Trace};

fn check(data: &[u8]) {
    let Ok(mut r) = BinaryReader::from_buf_read(data) else {
        return;
    };
    let Ok(t) = Trace::read_from(&mut r) else {
        return;
    };
    for (i, ev) in t.events.iter().enumerate() {
        assert!((ev.thread.0 as usize) < t.names.threads.len());
        assert!(
            ev.target == u32::MAX
                || (ev.target as usize) < t.names.table(ev.op.target_kind()).len()
        );
        assert!(ev.loc.is_none() || (ev.loc.0 as usize) < t.names.locs.len());
        for a in t.addresses(i) {
            assert!((a.0 as usize) < t.names.addrs.len());
        }
    }
    let mut w = BinaryWriter::new(Vec::new());
    let mut src = t.source();
    while let Some(ev) = src.next_event().unwrap() {
        w.write_event(&ev, src.names(), src.addresses(), src.seq())
            .unwrap();
    }
    let bytes = w.finish().unwrap();
    let u = Trace::read_from(&mut BinaryReader::from_buf_read(&bytes[..]).unwrap()).unwrap();
    assert_eq!(u.events.len(), t.events.len());
    for (a, b) in u.events.iter().zip(&t.events) {
        assert_eq!(u.names.thread(a.thread), t.names.thread(b.thread));
        assert_eq!(u.names.target(a), t.names.target(b));
        assert_eq!(u.names.loc(a.loc), t.names.loc(b.loc));
        assert_eq!(a.op, b.op);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut b = b"RACEPRED\x01\0\0\0\0\0\0\0".to_vec();
    b.extend_from_slice(data);
    check(&b);
});
