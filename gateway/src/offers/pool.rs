//! Where offer evaluations run (docs/pricing.md section 4, "Where
//! evaluations run"): a bounded pool of blocking threads beside the async
//! runtime, never the runtime's own workers.
//!
//! An evaluation is CPU work of up to its whole budget (rule calls and
//! search nodes, `pricing::SearchBudget`). Run inline on a worker thread of
//! the async runtime it holds that worker for as long as it lasts: nothing
//! else scheduled there runs, the request timeout (a timer polled on the
//! same worker) cannot fire, and two such calls on a two-core machine
//! freeze every request, `/healthz` included. Here at most
//! `--evaluation-threads` evaluations run at once, each on a blocking
//! thread (`tokio::task::spawn_blocking` behind a semaphore); at most
//! `--evaluation-queue` more wait for a thread, each for at most twice
//! `--evaluation-deadline-ms` (long enough for the evaluation ahead of it to
//! reach its own deadline); past either bound the caller is told to retry
//! ([`PoolError::Saturated`]). Every evaluation gets the same
//! wall-clock deadline from the moment it starts running ([`Deadline`]),
//! on top of its counted budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// `--evaluation-deadline-ms` by default.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(1_000);
/// `--evaluation-queue` by default.
pub const DEFAULT_QUEUE: usize = 64;

/// When a running evaluation must stop (its searches then end `bounded`).
#[derive(Debug, Clone, Copy)]
pub struct Deadline(Instant);

impl Deadline {
    /// A deadline `budget` from now.
    pub fn after(budget: Duration) -> Self {
        Deadline(Instant::now() + budget)
    }

    /// Whether it has passed.
    pub fn passed(&self) -> bool {
        Instant::now() >= self.0
    }
}

/// Why the pool did not run an evaluation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// Every thread is busy and the queue is full, or the wait for a thread
    /// outlasted the deadline: retry after `retry_after`.
    #[error("every offer evaluation thread is busy")]
    Saturated { retry_after: Duration },
    /// The evaluation panicked (a defect; logged by the caller).
    #[error("the offer evaluation failed: {0}")]
    Failed(String),
}

/// The bounded evaluation pool (see the module doc).
#[derive(Debug)]
pub struct EvaluationPool {
    permits: Arc<Semaphore>,
    threads: usize,
    waiting: AtomicUsize,
    max_waiting: usize,
    deadline: Duration,
}

impl Default for EvaluationPool {
    fn default() -> Self {
        Self::new(Self::threads_for(0), DEFAULT_QUEUE, DEFAULT_DEADLINE)
    }
}

/// Counts a waiting caller for as long as it waits (also when its request
/// is dropped while waiting).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl EvaluationPool {
    /// A pool of `threads` (at least 1), `max_waiting` queued callers and
    /// the per-evaluation `deadline`.
    pub fn new(threads: usize, max_waiting: usize, deadline: Duration) -> Self {
        let threads = threads.max(1);
        EvaluationPool {
            permits: Arc::new(Semaphore::new(threads)),
            threads,
            waiting: AtomicUsize::new(0),
            max_waiting,
            deadline,
        }
    }

    /// `--evaluation-threads`: the configured number, or for 0 one less
    /// than the machine's cores (at least one), so the async workers always
    /// keep a core for every other request.
    pub fn threads_for(configured: u32) -> usize {
        match usize::try_from(configured) {
            Ok(n) if n > 0 => n,
            _ => std::thread::available_parallelism()
                .map_or(1, |n| n.get().saturating_sub(1))
                .max(1),
        }
    }

    /// Evaluations that may run at once.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The wall-clock budget of one evaluation.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The longest a caller waits for a thread: twice the deadline, so it
    /// outlasts the evaluation running ahead of it.
    fn max_wait(&self) -> Duration {
        self.deadline.saturating_mul(2)
    }

    /// The hint given with [`PoolError::Saturated`]: about one deadline,
    /// the longest a running evaluation keeps its thread; at least 1 s.
    fn retry_after(&self) -> Duration {
        self.deadline.max(Duration::from_secs(1))
    }

    /// Runs `job` on a pool thread with the evaluation's [`Deadline`].
    ///
    /// # Errors
    /// [`PoolError::Saturated`] when it could not start (queue full, or no
    /// thread freed within twice the deadline); [`PoolError::Failed`] when it
    /// panicked.
    pub async fn run<T, F>(&self, job: F) -> Result<T, PoolError>
    where
        F: FnOnce(Deadline) -> T + Send + 'static,
        T: Send + 'static,
    {
        let saturated = || PoolError::Saturated {
            retry_after: self.retry_after(),
        };
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
                    self.waiting.fetch_sub(1, Ordering::AcqRel);
                    return Err(saturated());
                }
                let _waiting = Waiting(&self.waiting);
                match tokio::time::timeout(self.max_wait(), self.permits.clone().acquire_owned())
                    .await
                {
                    Ok(Ok(permit)) => permit,
                    Ok(Err(_)) | Err(_) => return Err(saturated()),
                }
            }
        };
        let deadline = self.deadline;
        // The permit travels with the job: a caller that gives up (its
        // request dropped) frees no thread until the job has ended, which
        // its deadline bounds.
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job(Deadline::after(deadline))
        })
        .await
        .map_err(|e| PoolError::Failed(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_pool_queues_within_its_bound_then_says_saturated() {
        let pool = Arc::new(EvaluationPool::new(1, 1, Duration::from_millis(150)));
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let busy = {
            let pool = pool.clone();
            tokio::spawn(async move {
                pool.run(move |_| {
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    1
                })
                .await
            })
        };
        tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
            .await
            .unwrap();
        // One may wait; it gives up after twice the deadline.
        let queued = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.run(|_| 2).await })
        };
        tokio::task::yield_now().await;
        while pool.waiting.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        // The queue is full: refused at once.
        assert_eq!(
            pool.run(|_| 3).await,
            Err(PoolError::Saturated {
                retry_after: Duration::from_secs(1)
            })
        );
        assert!(matches!(
            queued.await.unwrap(),
            Err(PoolError::Saturated { .. })
        ));
        assert_eq!(pool.waiting.load(Ordering::Acquire), 0);
        release_tx.send(()).unwrap();
        assert_eq!(busy.await.unwrap(), Ok(1));
        // Free again: it runs, with a deadline in the future.
        assert_eq!(pool.run(|d| d.passed()).await, Ok(false));
    }

    #[test]
    fn the_default_leaves_a_core_to_the_async_workers() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(EvaluationPool::threads_for(0), (cores - 1).max(1));
        assert_eq!(EvaluationPool::threads_for(3), 3);
    }
}
