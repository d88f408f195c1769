//! Event timestamps (minimal; the stages branch owns the full version of this module).
pub trait Clock {
    fn now(&self) -> String;
}
pub struct SystemClock;
impl Clock for SystemClock {
    fn now(&self) -> String {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        rfc3339(secs)
    }
}
pub struct FixedClock(pub String);
impl Clock for FixedClock {
    fn now(&self) -> String {
        self.0.clone()
    }
}
pub fn clock_from_env() -> Box<dyn Clock> {
    match std::env::var("AGENT_MEETING_NOW") {
        Ok(t) if !t.is_empty() => Box::new(FixedClock(t)),
        _ => Box::new(SystemClock),
    }
}
/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (civil-from-days, H. Hinnant).
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
