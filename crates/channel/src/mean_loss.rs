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
//!
//! [`ErrorModelConfig::fade_s`] is how long the channel's bad spells last, at a quantile `q`,
//! in seconds on a link whose frames take `frame_s` each: the frames a class loses in one
//! spell come back as repairs together, a burst its delay bound has to hold. Memoryless
//! models (independent loss, exponential bit-error intervals, a perfect channel) have no
//! spell: 0. Gilbert-Elliott in time: its bad periods are exponential with mean `bad_s`, so
//! `bad_s ln(1 / (1 - q))`; per frame: bad runs are geometric with mean `1 / r` frames, so
//! `ln(1 - q) / ln(1 - r)` frames (rounded up) of `frame_s`; a pattern: its `bad` frames; a
//! stack: its longest layer. Traces and ramps would have to be read: `None`.

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

    /// The `q`-quantile length in seconds of the channel's bad spells on a link whose frames
    /// take `frame_s` each (module docs), or `None` when it cannot be told from the
    /// configuration.
    pub fn fade_s(&self, q: f64, frame_s: f64) -> Option<f64> {
        let tail = (1.0 - q.clamp(0.0, 0.999_999)).ln();
        Some(match self {
            ErrorModelConfig::Perfect
            | ErrorModelConfig::Independent { .. }
            | ErrorModelConfig::Exponential { .. } => 0.0,
            ErrorModelConfig::GilbertElliottTime(p) => p.bad_s * -tail,
            ErrorModelConfig::GilbertElliott(p) if p.r >= 1.0 => frame_s,
            ErrorModelConfig::GilbertElliott(p) if p.r > 0.0 => {
                (tail / (1.0 - p.r).ln()).ceil() * frame_s
            }
            ErrorModelConfig::Pattern { bad, .. } => *bad as f64 * frame_s,
            ErrorModelConfig::Stack { layers } => {
                let mut longest = 0.0f64;
                for l in layers {
                    longest = longest.max(l.fade_s(q, frame_s)?);
                }
                longest
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

    fn fade(text: &str) -> Option<f64> {
        toml::from_str::<ErrorModelConfig>(text)
            .unwrap()
            .fade_s(0.95, 0.002)
    }

    #[test]
    fn each_model_gives_its_spell() {
        assert_eq!(fade("model = 'independent'\nloss = 0.05"), Some(0.0));
        assert_eq!(fade("model = 'exponential'\nmean_bytes = 32768"), Some(0.0));
        // Exponential bad periods of mean 16 ms: 5% last longer than 16 ms x ln 20 = 47.9 ms.
        let t = fade("model = 'gilbert_elliott_time'\ngood_s = 0.5\nbad_s = 0.016").unwrap();
        assert!((t - 0.016 * 20f64.ln()).abs() < 1e-12, "{t}");
        // Geometric runs of mean 10 frames (r = 0.1): 0.9^28 = 0.052, 0.9^29 = 0.047.
        let g = fade("model = 'gilbert_elliott'\np = 0.01\nr = 0.1").unwrap();
        assert!((g - 29.0 * 0.002).abs() < 1e-12, "{g}");
        assert_eq!(fade("model = 'pattern'\ngood = 9\nbad = 3"), Some(0.006));
        let s = fade("model = 'stack'\nlayers = [{ model = 'independent', loss = 0.1 }, { model = 'pattern', good = 1, bad = 2 }]");
        assert_eq!(s, Some(0.004));
        assert_eq!(fade("model = 'trace'\nfile = 'x'"), None);
    }
}
