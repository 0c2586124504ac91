//! The long-run frame loss an error model configuration gives, where it has one.
//!
//! Contract. [`ErrorModelConfig::mean_frame_loss`] is the probability that a frame of
//! `frame_bytes` is not delivered intact, in the long run, from the configuration alone (no
//! trace file is read): independent loss `p`; exponential bit-error intervals
//! `1 - exp(-8 L / mean_bits)` (004 §III.A); Gilbert-Elliott, per frame or in time, its
//! stationary loss (a corrupted frame counts: the link's CRC drops it); a pattern
//! `bad / (good + bad)`; a stack `1 - prod(1 - p_i)` (its layers drawn independently); a
//! perfect channel 0. A trace (of frames or of periods) would have to be read, and a ramp has
//! no single long-run rate: `None`. Scenario notes
//! use it to estimate the repairs a class will send (`mslink_link::budget`).

use crate::config::ErrorModelConfig;

impl ErrorModelConfig {
    /// Long-run loss of a frame of `frame_bytes` (module docs), or `None` when the model has
    /// no single long-run rate.
    pub fn mean_frame_loss(&self, frame_bytes: usize) -> Option<f64> {
        Some(match self {
            ErrorModelConfig::Perfect => 0.0,
            ErrorModelConfig::Independent { loss } => *loss,
            ErrorModelConfig::Exponential {
                mean_bits,
                mean_bytes,
                ..
            } => {
                let mean = mean_bits.or(mean_bytes.map(|b| b * 8.0))?;
                1.0 - (-(frame_bytes as f64 * 8.0) / mean).exp()
            }
            ErrorModelConfig::GilbertElliott(p) => p.stationary_loss(),
            // A hit frame is lost, or corrupted and then dropped by the link's CRC.
            ErrorModelConfig::GilbertElliottTime(p) => p.stationary_loss(),
            ErrorModelConfig::Pattern { good, bad, .. } if good + bad > 0 => {
                *bad as f64 / (good + bad) as f64
            }
            ErrorModelConfig::Pattern { .. } => 0.0,
            ErrorModelConfig::Stack { layers } => {
                let mut through = 1.0;
                for l in layers {
                    through *= 1.0 - l.mean_frame_loss(frame_bytes)?;
                }
                1.0 - through
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loss(text: &str, len: usize) -> Option<f64> {
        toml::from_str::<ErrorModelConfig>(text)
            .unwrap()
            .mean_frame_loss(len)
    }

    #[test]
    fn each_model_gives_its_closed_form() {
        // 004 Table I: 2^15-byte means lose 3.0% of 1000-byte frames.
        let e = loss("model = 'exponential'\nmean_bytes = 32768", 1000).unwrap();
        assert!((e - 0.0300).abs() < 5e-4, "{e}");
        assert_eq!(loss("model = 'independent'\nloss = 0.05", 1), Some(0.05));
        assert_eq!(
            loss("model = 'pattern'\ngood = 400\nbad = 100", 1),
            Some(0.2)
        );
        assert_eq!(loss("model = 'perfect'", 1), Some(0.0));
        let t = loss(
            "model = 'gilbert_elliott_time'\ngood_s = 0.97\nbad_s = 0.03",
            1,
        )
        .unwrap();
        assert!((t - 0.03).abs() < 1e-12, "{t}");
        let s = loss(
            "model = 'stack'\nlayers = [{ model = 'independent', loss = 0.1 }, { model = 'independent', loss = 0.1 }]",
            1,
        )
        .unwrap();
        assert!((s - 0.19).abs() < 1e-12);
        assert_eq!(loss("model = 'trace'\nfile = 'x'", 1), None);
        assert_eq!(loss("model = 'ramp'\nstart_s = 1\nrise_s = 1", 1), None);
    }
}
