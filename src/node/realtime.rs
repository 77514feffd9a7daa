//! The burst thread's real-time settings (`node.realtime`): a CPU core to pin it to, a
//! SCHED_FIFO priority, locked memory. Each is applied when the process is permitted to and
//! logged either way: a node without the privileges still runs, and says what it lacks.

use super::settings::RealtimeConfig;

/// What applying the settings did, one line per setting asked for.
pub fn apply(c: &RealtimeConfig) -> Vec<Result<String, String>> {
    let mut done = vec![];
    if let Some(cpu) = c.cpu {
        done.push(pin(cpu));
    }
    if c.priority > 0 {
        done.push(fifo(c.priority));
    }
    if c.lock_memory {
        done.push(lock_memory());
    }
    done
}

/// Apply and log.
pub fn apply_logged(c: &RealtimeConfig) {
    for r in apply(c) {
        match r {
            Ok(m) => tracing::info!("node.realtime: {m}"),
            Err(m) => tracing::warn!("node.realtime: {m}"),
        }
    }
}

fn os_error() -> String {
    std::io::Error::last_os_error().to_string()
}

fn pin(cpu: usize) -> Result<String, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("cpu {cpu}: no such core (this machine has {cores})"));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it (cpu < CPU_SETSIZE).
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r == 0 {
        Ok(format!("burst thread pinned to cpu {cpu}"))
    } else {
        Err(format!(
            "cannot pin the burst thread to cpu {cpu} ({}; {cores} cores available): it runs where the scheduler puts it",
            os_error()
        ))
    }
}

fn fifo(priority: u8) -> Result<String, String> {
    let p = priority.min(99) as i32;
    let param = libc::sched_param { sched_priority: p };
    // SAFETY: plain system call on the calling thread with a valid parameter.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if r == 0 {
        Ok(format!("burst thread on SCHED_FIFO priority {p}"))
    } else {
        Err(format!(
            "cannot set SCHED_FIFO priority {p} ({}): the burst thread keeps the default scheduler (needs root, CAP_SYS_NICE or an rtprio limit)",
            os_error()
        ))
    }
}

fn lock_memory() -> Result<String, String> {
    // SAFETY: plain system call.
    let r = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if r == 0 {
        Ok("memory locked (mlockall)".into())
    } else {
        Err(format!("cannot lock memory ({}): pages may be swapped out (needs root, CAP_IPC_LOCK or a memlock limit)", os_error()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_that_does_not_exist_is_refused_with_a_reason() {
        let r = apply(&RealtimeConfig { cpu: Some(100_000), priority: 0, ..Default::default() });
        assert!(r[0].as_ref().unwrap_err().contains("cpu 100000"), "{r:?}");
    }

    #[test]
    fn pinning_to_core_0_works_or_says_why() {
        let t = std::thread::spawn(|| apply(&RealtimeConfig { cpu: Some(0), priority: 0, ..Default::default() }));
        let r = t.join().unwrap();
        match &r[0] {
            Ok(m) => assert!(m.contains("cpu 0")),
            Err(m) => assert!(m.contains("cannot pin")),
        }
    }
}
