//! Seeds from the kernel's random generator (`getrandom(2)`), for every driver that needs one.

use std::io;

/// 32 bytes from the kernel's generator.
pub fn os_random() -> io::Result<[u8; 32]> {
    let mut b = [0u8; 32];
    let mut filled = 0;
    while filled < b.len() {
        // SAFETY: writes at most the remaining length into our buffer.
        let n = unsafe { libc::getrandom(b[filled..].as_mut_ptr().cast(), b.len() - filled, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        } else {
            filled += n as usize;
        }
    }
    Ok(b)
}

/// A 64-bit seed from the kernel's generator.
pub fn os_seed() -> io::Result<u64> {
    let b = os_random()?;
    Ok(u64::from_le_bytes(b[..8].try_into().expect("8 bytes")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_draws_differ() {
        assert_ne!(super::os_random().unwrap(), super::os_random().unwrap());
    }
}
