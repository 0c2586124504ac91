//! Running many independent jobs (simulation runs) on a few threads with results in a fixed
//! order.
//!
//! Contract. [`parallel_in_order`] calls `f(0)`, .., `f(n - 1)` on `threads` threads and hands
//! each result to a sink on the calling thread in index order, whatever order the calls finish
//! in, so everything written from the results is the same at any thread count; at most
//! `2 * threads` results wait ahead of the sink, so memory does not grow with `n`.
//! [`parallel_ordered`] collects them. `tick` is called once per finished call (a progress bar
//! in the CLI; `&|| {}` for none).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::Result;

/// `f(0)`, .., `f(n - 1)` on `threads` threads, in index order whatever order they finish in
/// (so outputs do not depend on `--jobs`), calling `tick` once per finished call (a progress bar).
pub fn parallel_ordered<T: Send>(
    n: usize,
    threads: usize,
    tick: &(dyn Fn() + Sync),
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let mut out = Vec::with_capacity(n);
    let done: Result<()> = parallel_in_order(n, threads, tick, f, |_, t| {
        out.push(t);
        Ok(())
    });
    debug_assert!(done.is_ok());
    out
}

/// `f(0)`, .., `f(n - 1)` on `threads` threads, each result handed to `sink` on the calling
/// thread in index order as soon as it and every earlier one are done, so results can be
/// written and dropped as the runs finish. A worker starts index `i` only once fewer than
/// `2 * threads` results wait ahead of it, so at most that many are held. The first error of
/// `sink` stops the workers (those running finish their call) and is returned. A panic in `f`
/// is not swallowed: it ends the wait and propagates.
pub fn parallel_in_order<T: Send>(
    n: usize,
    threads: usize,
    tick: &(dyn Fn() + Sync),
    f: impl Fn(usize) -> T + Sync,
    mut sink: impl FnMut(usize, T) -> Result<()>,
) -> Result<()> {
    struct State<T> {
        ready: std::collections::BTreeMap<usize, T>,
        delivered: usize,
        stop: bool,
    }
    /// Stops everyone when its worker unwinds.
    struct OnPanic<'a, T>(&'a Mutex<State<T>>, &'a std::sync::Condvar);
    impl<T> Drop for OnPanic<'_, T> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                if let Ok(mut st) = self.0.lock() {
                    st.stop = true;
                }
                self.1.notify_all();
            }
        }
    }
    let threads = threads.clamp(1, n.max(1));
    let window = 2 * threads;
    let next = AtomicUsize::new(0);
    let state = Mutex::new(State {
        ready: std::collections::BTreeMap::new(),
        delivered: 0,
        stop: false,
    });
    let cv = std::sync::Condvar::new();
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    let mut result = Ok(());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let _guard = OnPanic(&state, &cv);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    {
                        let mut st = lock();
                        while !st.stop && i >= st.delivered + window {
                            st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
                        }
                        if st.stop {
                            break;
                        }
                    }
                    let r = f(i);
                    lock().ready.insert(i, r);
                    cv.notify_all();
                    tick();
                }
            });
        }
        for i in 0..n {
            let t = {
                let mut st = lock();
                loop {
                    if let Some(t) = st.ready.remove(&i) {
                        break Some(t);
                    }
                    if st.stop {
                        break None;
                    }
                    st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            let Some(t) = t else { break };
            if let Err(e) = sink(i, t) {
                result = Err(e);
                lock().stop = true;
                cv.notify_all();
                break;
            }
            lock().delivered = i + 1;
            cv.notify_all();
        }
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_arrive_in_order_and_few_wait() {
        for threads in [1, 2, 4] {
            let running = AtomicUsize::new(0);
            let mut seen = Vec::new();
            let mut most_waiting = 0;
            let done = parallel_in_order(
                200,
                threads,
                &|| {},
                |i| {
                    running.fetch_add(1, Ordering::SeqCst);
                    // Later indices finish first: a fast worker runs ahead of a slow one.
                    std::thread::yield_now();
                    i * 3
                },
                |i, v| {
                    // Started minus handed over: what is running or waiting ahead of `sink`.
                    most_waiting = most_waiting.max(running.load(Ordering::SeqCst) - i);
                    seen.push((i, v));
                    Ok(())
                },
            );
            assert!(done.is_ok());
            assert_eq!(seen, (0..200).map(|i| (i, i * 3)).collect::<Vec<_>>());
            assert!(most_waiting <= 2 * threads, "{threads}: {most_waiting}");
        }
    }

    #[test]
    fn a_sink_error_stops_the_runs() {
        let calls = AtomicUsize::new(0);
        let r = parallel_in_order(
            10_000,
            2,
            &|| {},
            |i| {
                calls.fetch_add(1, Ordering::SeqCst);
                i
            },
            |i, _| {
                if i == 5 {
                    anyhow::bail!("disk full at {i}")
                }
                Ok(())
            },
        );
        assert_eq!(r.unwrap_err().to_string(), "disk full at 5");
        // At most the window past the failing run started.
        assert!(calls.load(Ordering::SeqCst) <= 5 + 1 + 4, "{calls:?}");
    }

    #[test]
    #[should_panic(expected = "a scoped thread panicked")]
    fn a_panic_in_a_run_is_not_swallowed() {
        let _ = parallel_in_order(
            10,
            2,
            &|| {},
            |i| {
                if i == 3 {
                    panic!("run 3 broke");
                }
                i
            },
            |_, _| Ok(()),
        );
    }
}
