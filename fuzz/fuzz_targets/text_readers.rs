//! The four text readers over arbitrary bytes: `Ok` or `Err`, never a panic; every event's
//! ids must name an interned name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use racepred::trace::csv::CsvReader;
use racepred::trace::golog::GoLogReader;
use racepred::trace::rr::RrReader;
use racepred::trace::std_format::StdReader;
use racepred::trace::EventSource;

fn drain(src: &mut dyn EventSource) {
    while let Ok(Some(ev)) = src.next_event() {
        let names = src.names();
        assert!((ev.thread.0 as usize) < names.threads.len());
        assert!(
            ev.target == u32::MAX || (ev.target as usize) < names.table(ev.op.target_kind()).len()
        );
        assert!(ev.loc.is_none() || (ev.loc.0 as usize) < names.locs.len());
        for a in src.addresses() {
            assert!((a.0 as usize) < names.addrs.len());
        }
        let _ = (src.seq(), src.position());
    }
}

fuzz_target!(|data: &[u8]| {
    drain(&mut StdReader::new(data));
    drain(&mut RrReader::new(data));
    drain(&mut CsvReader::new(data));
    drain(&mut GoLogReader::new(data));
});
