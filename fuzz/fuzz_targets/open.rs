//! Decompression, sniffing and whichever reader the content picks: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use racepred::trace::open::open_reader;

fuzz_target!(|data: &[u8]| {
    if let Ok(mut s) = open_reader(std::io::Cursor::new(data.to_vec()), None) {
        let mut n = 0;
        while let Ok(Some(_)) = s.next_event() {
            let _ = (s.addresses(), s.seq(), s.position());
            n += 1;
            if n > 100_000 {
                break; // a tiny compressed input can expand a lot
            }
        }
    }
});
