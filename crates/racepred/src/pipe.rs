//! A bounded single-producer, single-consumer queue between two threads that wakes a
//! waiting side in batches, not at every item.
//!
//! The drivers hand blocks of events from a reading thread to analysing threads (and the
//! decompression thread hands chunks of bytes to the reader). One side is nearly always
//! faster, so it keeps finding the queue full (or empty) and sleeping. With
//! `std::sync::mpsc::sync_channel` each block the slower side moves wakes the faster one,
//! which moves one block and sleeps again: a `futex` wake, and in a virtual machine an
//! inter-processor interrupt, per block. Here a sender that found the queue full
//! sleeps until it is at most half full, and a receiver that found it empty sleeps until it
//! is at least half full (or the sender is gone), so each wake moves half a queue. Items keep
//! their order; memory is bounded by the capacity as with a channel.
//!
//! Built on `std`'s `Mutex` and `Condvar`; a side that finds the other not waiting makes no
//! system call.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

struct State<T> {
    queue: VecDeque<T>,
    sender_alive: bool,
    receiver_alive: bool,
    /// A side sleeping on its condition variable (set by itself, cleared by whoever wakes
    /// it, so each sleep costs the other side at most one notification).
    sender_waiting: bool,
    receiver_waiting: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    not_full: Condvar,
    not_empty: Condvar,
    cap: usize,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic on the other side while it held the lock leaves a queue that is still
        // consistent (every update is a single push or pop).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the sender (`sender`) or the receiver gone, waking the other side if it sleeps.
    fn leave(&self, sender: bool) {
        let mut st = self.lock();
        if sender {
            st.sender_alive = false;
            st.receiver_waiting = false;
            self.not_empty.notify_one();
        } else {
            st.receiver_alive = false;
            st.sender_waiting = false;
            self.not_full.notify_one();
        }
    }

    /// Queue length at or below which a sleeping sender is woken.
    fn low(&self) -> usize {
        self.cap / 2
    }

    /// Queue length at or above which a sleeping receiver is woken.
    fn high(&self) -> usize {
        self.cap.div_ceil(2)
    }
}

/// The sending half ([`pipe`]).
pub struct PipeSender<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving half ([`pipe`]).
pub struct PipeReceiver<T> {
    shared: Arc<Shared<T>>,
}

/// A queue of at most `cap` items (at least 1).
pub fn pipe<T>(cap: usize) -> (PipeSender<T>, PipeReceiver<T>) {
    let cap = cap.max(1);
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::with_capacity(cap),
            sender_alive: true,
            receiver_alive: true,
            sender_waiting: false,
            receiver_waiting: false,
        }),
        not_full: Condvar::new(),
        not_empty: Condvar::new(),
        cap,
    });
    (
        PipeSender {
            shared: shared.clone(),
        },
        PipeReceiver { shared },
    )
}

impl<T> PipeSender<T> {
    /// Queues `item`, first waiting while the queue is full; gives it back if the receiver
    /// is gone.
    pub fn send(&self, item: T) -> Result<(), T> {
        let sh = &*self.shared;
        let mut st = sh.lock();
        if st.queue.len() >= sh.cap {
            // Full: sleep until the receiver has taken half of it.
            st.sender_waiting = true;
            while st.receiver_alive && st.sender_waiting {
                st = sh.not_full.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            st.sender_waiting = false;
        }
        if !st.receiver_alive {
            return Err(item);
        }
        st.queue.push_back(item);
        if st.receiver_waiting && st.queue.len() >= sh.high() {
            st.receiver_waiting = false;
            sh.not_empty.notify_one();
        }
        Ok(())
    }
}

impl<T> PipeReceiver<T> {
    /// The next item, first waiting while the queue is empty; `None` once it is empty and
    /// the sender is gone.
    pub fn recv(&self) -> Option<T> {
        let sh = &*self.shared;
        let mut st = sh.lock();
        if st.queue.is_empty() && st.sender_alive {
            // Empty: sleep until the sender has filled half of it, or is gone.
            st.receiver_waiting = true;
            while st.sender_alive && st.receiver_waiting {
                st = sh.not_empty.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            st.receiver_waiting = false;
        }
        let item = st.queue.pop_front();
        if st.sender_waiting && st.queue.len() <= sh.low() {
            st.sender_waiting = false;
            sh.not_full.notify_one();
        }
        item
    }
}

impl<T> Iterator for PipeReceiver<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.recv()
    }
}

impl<T> Drop for PipeSender<T> {
    fn drop(&mut self) {
        self.shared.leave(true);
    }
}

impl<T> Drop for PipeReceiver<T> {
    fn drop(&mut self) {
        // The items left are dropped with the last half.
        self.shared.leave(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a thread of its own and fails if it has not finished within 30 s: a lost
    /// wake-up makes the test fail instead of hanging.
    fn within_time(f: impl FnOnce() + Send + 'static) {
        let (done, finished) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            f();
            let _ = done.send(());
        });
        match finished.recv_timeout(std::time::Duration::from_secs(30)) {
            // Done, or panicked (its `done` dropped): its panic is the test's.
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                if let Err(panic) = worker.join() {
                    std::panic::resume_unwind(panic);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("not finished within 30 s: a side was never woken")
            }
        }
    }

    #[test]
    fn items_arrive_in_order_whichever_side_is_faster() {
        within_time(|| {
            for (cap, slow_sender) in [(1, false), (1, true), (2, false), (8, true), (8, false)] {
                let (tx, rx) = pipe::<u32>(cap);
                let sender = std::thread::spawn(move || {
                    for i in 0..2000 {
                        if slow_sender && i % 97 == 0 {
                            std::thread::sleep(std::time::Duration::from_micros(200));
                        }
                        tx.send(i).unwrap();
                    }
                });
                let mut got = Vec::new();
                for (k, i) in rx.enumerate() {
                    if !slow_sender && k % 89 == 0 {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    got.push(i);
                }
                sender.join().unwrap();
                assert_eq!(got, (0..2000).collect::<Vec<_>>(), "cap {cap}");
            }
        });
    }

    #[test]
    fn a_gone_receiver_hands_items_back_and_a_gone_sender_ends_the_stream() {
        within_time(|| {
            let (tx, rx) = pipe::<u32>(2);
            tx.send(1).unwrap();
            tx.send(2).unwrap();
            // Full: the send waits until the receiver goes away, then gets its item back.
            let waiter = std::thread::spawn(move || tx.send(3));
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(rx);
            assert_eq!(waiter.join().unwrap(), Err(3));

            let (tx, rx) = pipe::<u32>(4);
            tx.send(7).unwrap();
            drop(tx);
            assert_eq!(rx.collect::<Vec<_>>(), vec![7]);
        });
    }

    #[test]
    fn a_receiver_waiting_on_an_empty_queue_wakes_when_the_sender_leaves() {
        within_time(|| {
            let (tx, rx) = pipe::<u32>(8);
            let r = std::thread::spawn(move || rx.collect::<Vec<_>>());
            std::thread::sleep(std::time::Duration::from_millis(20));
            tx.send(5).unwrap(); // fewer than half: no wake yet
            drop(tx);
            assert_eq!(r.join().unwrap(), vec![5]);
        });
    }
}
