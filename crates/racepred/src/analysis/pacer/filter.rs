//! The first pass over a non-sampling run of events: which accesses touch a variable
//! without metadata (PACER's "no action", Alg. 12–13 with null `R_f` and `W_f`) and which
//! events need a closer look.
//!
//! This pass is PACER's floor: it runs on every event outside sampling periods, so at low
//! rates it is most of PACER's cost, set against a FastTrack that does little more per
//! event. The portable version is a branch-free loop, one event at a time;
//! on x86-64 with AVX2 (detected at run time) eight events go at once: their targets and
//! operations are pulled out of four 32-byte loads, the eight metadata bits come from one
//! gather over the bitmap, and the positions of the events that need a look come from a
//! table indexed by the chunk's mask, written with one store. Both give the same answer
//! (unit tests).

use crate::trace::{Event, Op};

/// What the first pass found in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Filtered {
    /// Reads and writes of variables whose metadata bit is clear (done with).
    pub fast_reads: u64,
    pub fast_writes: u64,
    /// How many positions of the run were written to the front of the candidate list.
    pub candidates: usize,
}

/// Lists in `cand` the positions in `run` of the events that are not accesses to a
/// variable whose bit in `has_meta` is clear (synchronisation, and accesses to variables
/// with metadata), and counts the others. `cand` is resized as needed; only its first
/// `candidates` entries mean anything.
pub(super) fn filter(run: &[Event], has_meta: &[u64], cand: &mut Vec<u32>) -> Filtered {
    // Room for the vector loop's whole-chunk stores past the last candidate.
    if cand.len() < run.len() + 8 {
        cand.resize(run.len() + 8, 0);
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above), and `cand` has room for
        // `run.len() + 8` entries (resized above).
        return unsafe { avx2::filter(run, has_meta, cand) };
    }
    filter_scalar(run, has_meta, cand, 0, Filtered::default())
}

/// The portable loop, from position `from` of `run` on, adding to `acc`.
#[inline]
fn filter_scalar(
    run: &[Event],
    has_meta: &[u64],
    cand: &mut [u32],
    from: usize,
    mut acc: Filtered,
) -> Filtered {
    // Counts in registers: a counter in memory bumped at every event is a chain of
    // store-to-load forwards.
    let (mut fast, mut writes, mut len) = (0u64, 0u64, acc.candidates);
    let cand = &mut cand[..run.len() + 1];
    for (k, ev) in run.iter().enumerate().skip(from) {
        let x = ev.target as usize;
        let bit = has_meta.get(x >> 6).map_or(0, |w| (w >> (x & 63)) & 1);
        let op = ev.op as u64;
        // Read = 0, Write = 1.
        let access = (op < 2) as u64;
        let f = access & (bit ^ 1);
        fast += f;
        writes += f & op;
        cand[len] = k as u32;
        len += (f ^ 1) as usize;
    }
    acc.fast_reads += fast - writes;
    acc.fast_writes += writes;
    acc.candidates = len;
    acc
}

const _: () = assert!(Op::Read as u8 == 0 && Op::Write as u8 == 1);

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{filter_scalar, Filtered};
    use crate::trace::Event;
    use std::arch::x86_64::*;

    /// The unpacks below leave the eight events of a chunk in lanes 0–7 in this order.
    const LANE_EVENT: [u8; 8] = [0, 2, 4, 6, 1, 3, 5, 7];

    /// `POSITIONS[m]`: the events (0–7, ascending) whose lanes are set in `m`, padded with
    /// zeros, so no shuffle puts the lanes back in event order.
    static POSITIONS: [[u8; 8]; 256] = {
        let mut t = [[0u8; 8]; 256];
        let mut m = 0;
        while m < 256 {
            let mut k = 0;
            let mut e = 0;
            while e < 8 {
                // Is event `e`'s lane set?
                let mut lane = 0;
                while LANE_EVENT[lane] != e {
                    lane += 1;
                }
                if m & (1 << lane) != 0 {
                    t[m][k] = e;
                    k += 1;
                }
                e += 1;
            }
            m += 1;
        }
        t
    };

    /// [`super::filter`] eight events at a time.
    ///
    /// # Safety
    /// The CPU must support AVX2, and `cand.len() >= run.len() + 8`.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn filter(run: &[Event], has_meta: &[u64], cand: &mut [u32]) -> Filtered {
        debug_assert!(cand.len() >= run.len() + 8);
        // The bitmap as 32-bit words: on a little-endian machine bit `x` of the `u64`
        // words is bit `x & 31` of 32-bit word `x >> 5`.
        let words = has_meta.as_ptr() as *const i32;
        // Fewer than 2^27 words (2^32 variables), so the signed compares below are exact.
        let nwords = _mm256_set1_epi32((has_meta.len() * 2).min(i32::MAX as usize) as i32);
        let byte = _mm256_set1_epi32(0xff);
        let one = _mm256_set1_epi32(1);
        let two = _mm256_set1_epi32(2);
        let low5 = _mm256_set1_epi32(31);
        let zero = _mm256_setzero_si256();
        // Per lane: accesses that were done with, and writes among them (lane counts).
        let (mut fast, mut writes) = (zero, zero);
        let mut len = 0usize;
        let chunks = run.len() / 8;
        let p = run.as_ptr() as *const __m256i;
        let out = cand.as_mut_ptr();
        for c in 0..chunks {
            // SAFETY (all loads): `Event` is 16 bytes, `repr(C)`, every byte initialised
            // (explicit padding), so chunk `c` is four in-bounds 32-byte loads of plain
            // integers: (thread, target, loc, op + padding) per event.
            let a = _mm256_loadu_si256(p.add(4 * c));
            let b = _mm256_loadu_si256(p.add(4 * c + 1));
            let cc = _mm256_loadu_si256(p.add(4 * c + 2));
            let d = _mm256_loadu_si256(p.add(4 * c + 3));
            // Per 128-bit lane: (t0 t2 x0 x2 | t1 t3 x1 x3) and (l0 l2 o0 o2 | l1 l3 o1 o3).
            let ab_lo = _mm256_unpacklo_epi32(a, b);
            let ab_hi = _mm256_unpackhi_epi32(a, b);
            let cd_lo = _mm256_unpacklo_epi32(cc, d);
            let cd_hi = _mm256_unpackhi_epi32(cc, d);
            // Targets and operations of the events in `LANE_EVENT` order.
            let x = _mm256_unpackhi_epi64(ab_lo, cd_lo);
            let op = _mm256_and_si256(_mm256_unpackhi_epi64(ab_hi, cd_hi), byte);
            let widx = _mm256_srli_epi32::<5>(x);
            let inside = _mm256_cmpgt_epi32(nwords, widx);
            // SAFETY: only lanes with `widx < nwords` are loaded, all inside `has_meta`.
            let w = _mm256_mask_i32gather_epi32::<4>(zero, words, widx, inside);
            // The metadata bit moved to the sign: shift left by 31 - (x & 31).
            let bit = _mm256_sllv_epi32(w, _mm256_andnot_si256(x, low5));
            let access = _mm256_cmpgt_epi32(two, op);
            // Sign set: an access whose bit is clear; then all ones / zero per lane.
            let f = _mm256_andnot_si256(bit, access);
            let fl = _mm256_srai_epi32::<31>(f);
            fast = _mm256_sub_epi32(fast, fl);
            writes = _mm256_sub_epi32(writes, _mm256_and_si256(fl, _mm256_cmpeq_epi32(op, one)));
            // The positions of the others (rare outside synchronisation), as one store.
            let m = !(_mm256_movemask_ps(_mm256_castsi256_ps(f)) as u32) & 0xff;
            if m != 0 {
                let pos = _mm_loadl_epi64(POSITIONS[m as usize].as_ptr() as *const __m128i);
                let v =
                    _mm256_add_epi32(_mm256_cvtepu8_epi32(pos), _mm256_set1_epi32((8 * c) as i32));
                // SAFETY: `len <= 8 * c`, and `cand` has `run.len() + 8` entries.
                _mm256_storeu_si256(out.add(len) as *mut __m256i, v);
                len += m.count_ones() as usize;
            }
        }
        // Lane counts are at most `chunks` each.
        let (mut f, mut w) = ([0u32; 8], [0u32; 8]);
        _mm256_storeu_si256(f.as_mut_ptr() as *mut __m256i, fast);
        _mm256_storeu_si256(w.as_mut_ptr() as *mut __m256i, writes);
        let fast: u64 = f.iter().map(|&n| n as u64).sum();
        let writes: u64 = w.iter().map(|&n| n as u64).sum();
        let acc = Filtered {
            fast_reads: fast - writes,
            fast_writes: writes,
            candidates: len,
        };
        filter_scalar(run, has_meta, cand, chunks * 8, acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{LocId, ThreadId};
    use rand::{Rng, SeedableRng};

    fn random_run(rng: &mut rand_pcg::Pcg64, n: usize, vars: u32) -> Vec<Event> {
        let ops = [
            Op::Read,
            Op::Write,
            Op::Acquire,
            Op::Release,
            Op::Fork,
            Op::VolatileWrite,
            Op::Wait,
        ];
        (0..n)
            .map(|_| {
                let op = ops[rng.gen_range(0..ops.len())];
                // Some targets past the bitmap's end, some far past it.
                let x = match rng.gen_range(0..10) {
                    0 => rng.gen::<u32>(),
                    _ => rng.gen_range(0..vars),
                };
                Event::new(ThreadId(rng.gen_range(0..4)), op, x, LocId(rng.gen()))
            })
            .collect()
    }

    /// The answer by definition, one event at a time.
    fn reference(run: &[Event], has_meta: &[u64]) -> (Filtered, Vec<u32>) {
        let mut f = Filtered::default();
        let mut cand = Vec::new();
        for (k, e) in run.iter().enumerate() {
            let x = e.target as usize;
            let bit = has_meta
                .get(x / 64)
                .is_some_and(|w| w & (1 << (x % 64)) != 0);
            match e.op {
                Op::Read if !bit => f.fast_reads += 1,
                Op::Write if !bit => f.fast_writes += 1,
                _ => cand.push(k as u32),
            }
        }
        f.candidates = cand.len();
        (f, cand)
    }

    #[test]
    fn every_version_lists_what_the_definition_lists() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
        for round in 0..300 {
            let n = rng.gen_range(0..100) + if round % 10 == 0 { 4096 } else { 0 };
            let vars = rng.gen_range(1..3000);
            let words = rng.gen_range(0..(vars as usize / 64 + 2));
            let density = rng.gen_range(0.0..1.0);
            let has_meta: Vec<u64> = (0..words)
                .map(|_| (0..64).fold(0, |w, b| w | ((rng.gen_bool(density) as u64) << b)))
                .collect();
            let run = random_run(&mut rng, n, vars);
            let (want, want_cand) = reference(&run, &has_meta);
            let mut cand = Vec::new();
            let got = filter(&run, &has_meta, &mut cand);
            assert_eq!(got, want, "round {round}");
            assert_eq!(&cand[..got.candidates], &want_cand[..], "round {round}");
            let mut cand = vec![0; run.len() + 8];
            let got = filter_scalar(&run, &has_meta, &mut cand, 0, Filtered::default());
            assert_eq!(got, want, "round {round}, scalar");
            assert_eq!(
                &cand[..got.candidates],
                &want_cand[..],
                "round {round}, scalar"
            );
        }
    }
}
