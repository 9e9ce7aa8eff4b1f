//! A small hand-written argument parser: flags declared per command, `--flag value` or
//! `--flag=value`, repeatable flags (only those in [`REPEATABLE`]; any other given twice is a
//! usage error, never a silent "last one wins"), `--` to end flags, `-` as a positional (stdin).
//! An unknown flag or command is answered with the nearest known one ("did you mean").

use std::collections::HashMap;

/// The flags that may be given more than once, each value kept.
pub(crate) const REPEATABLE: &[&str] = &["requirement", "otlp-header", "ca-file", "peer-allow"];

/// The known name nearest to `typed` (by edit distance, at most a third of its length and at
/// least 1), or one that `typed` is a prefix of, for "did you mean".
pub(crate) fn nearest<'a>(
    typed: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (typed.chars().count() / 3).max(1);
    known
        .into_iter()
        .map(|k| {
            let d = if k.starts_with(typed) && !typed.is_empty() {
                0
            } else {
                distance(typed, k)
            };
            (d, k)
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// `did you mean {before}{name}{after}? ` for the known name nearest `typed` (see
/// [`nearest`]), or nothing.
pub(crate) fn did_you_mean<'a>(
    typed: &str,
    known: impl IntoIterator<Item = &'a str>,
    before: &str,
    after: &str,
) -> String {
    nearest(typed, known)
        .map(|near| format!("did you mean {before}{near}{after}? "))
        .unwrap_or_default()
}

/// Levenshtein distance, with a swap of two neighbours counting one (a typo like `inptu`).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The range of an integer type by name, for a message about a number out of range.
fn range_of<T>() -> Option<&'static str> {
    Some(match std::any::type_name::<T>() {
        "u8" => "0 to 255",
        "u16" => "0 to 65535",
        "u32" => "0 to 4294967295",
        "u64" | "usize" => "0 to 18446744073709551615",
        _ => return None,
    })
}

/// One flag a command accepts.
pub(crate) struct Flag {
    /// `--name`, without the dashes.
    pub(crate) name: &'static str,
    /// The value's placeholder (`PORT`), or `None` for a switch.
    pub(crate) value: Option<&'static str>,
    /// One line of help.
    pub(crate) help: &'static str,
}

impl Flag {
    /// `--name PLACEHOLDER`: a flag that takes a value.
    pub(crate) const fn taking(
        name: &'static str,
        placeholder: &'static str,
        help: &'static str,
    ) -> Flag {
        Flag {
            name,
            value: Some(placeholder),
            help,
        }
    }

    /// `--name`: a switch, given or not.
    pub(crate) const fn switch(name: &'static str, help: &'static str) -> Flag {
        Flag {
            name,
            value: None,
            help,
        }
    }
}

/// What a command line said, after checking it against the command's flags.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    values: HashMap<&'static str, Vec<String>>,
    switches: Vec<&'static str>,
    /// Positional arguments, in order.
    pub(crate) positionals: Vec<String>,
}

impl Parsed {
    /// The last value given for `--name`.
    pub(crate) fn value(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// Every value given for a repeatable `--name`.
    pub(crate) fn values(&self, name: &str) -> &[String] {
        self.values.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Whether the switch `--name` was given.
    pub(crate) fn switch(&self, name: &str) -> bool {
        self.switches.contains(&name)
    }

    /// The positional arguments as string slices, for matching against a pattern.
    pub(crate) fn words(&self) -> Vec<&str> {
        self.positionals.iter().map(String::as_str).collect()
    }

    /// `Err` when any positional argument was given, for a command that takes none.
    pub(crate) fn no_arguments(&self) -> Result<(), String> {
        if self.positionals.is_empty() {
            return Ok(());
        }
        Err(format!("takes no arguments, got {:?}", self.positionals))
    }

    /// `--name` as a number that must not be 0 (`--name must be at least 1<unit>`).
    pub(crate) fn at_least_one<T: std::str::FromStr + Default + PartialEq>(
        &self,
        name: &str,
        unit: &str,
    ) -> Result<Option<T>, String> {
        match self.number::<T>(name)? {
            Some(n) if n == T::default() => Err(format!("--{name} must be at least 1{unit}")),
            n => Ok(n),
        }
    }

    /// `--name` in seconds (decimals allowed); `Err(out_of_range(s))` for one that `within`
    /// refuses or that is not finite.
    pub(crate) fn seconds(
        &self,
        name: &str,
        within: impl Fn(f64) -> bool,
        out_of_range: impl FnOnce(f64) -> String,
    ) -> Result<Option<std::time::Duration>, String> {
        match self.number::<f64>(name)? {
            Some(s) if !(s.is_finite() && within(s)) => Err(out_of_range(s)),
            s => Ok(s.map(std::time::Duration::from_secs_f64)),
        }
    }

    /// `--name` parsed as a number, with a clear message when it is not one, or is a whole
    /// number outside what the flag can hold (saying the range).
    pub(crate) fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        match self.value(name) {
            None => Ok(None),
            Some(v) => v.trim().parse().map(Some).map_err(|_| {
                match (v.trim().parse::<i128>(), range_of::<T>()) {
                    (Ok(_), Some(range)) => {
                        format!("--{name} must be from {range}, got {v}")
                    }
                    (Err(_), Some(_)) if v.trim().parse::<f64>().is_ok() => {
                        format!("--{name} must be a whole number, got {v}")
                    }
                    _ => format!("--{name} expects a number, got {v:?}"),
                }
            }),
        }
    }
}

/// Parse `args` (after the command name) against `flags`. `Err` is a usage message.
pub(crate) fn parse(command: &str, flags: &[Flag], args: &[String]) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    let mut iter = args.iter();
    let mut flags_done = false;
    while let Some(arg) = iter.next() {
        if flags_done || arg == "-" || !arg.starts_with('-') {
            parsed.positionals.push(arg.clone());
            continue;
        }
        if arg == "--" {
            flags_done = true;
            continue;
        }
        let (name, inline) = match arg.trim_start_matches('-').split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (arg.trim_start_matches('-'), None),
        };
        let flag = flags.iter().find(|f| f.name == name).ok_or_else(|| {
            let hint = did_you_mean(name, flags.iter().map(|f| f.name), "--", "");
            format!(
                "unknown option {arg} for `ddwire {command}`; {hint}see `ddwire {command} --help`"
            )
        })?;
        let given_before =
            parsed.switches.contains(&flag.name) || parsed.values.contains_key(flag.name);
        if given_before && !REPEATABLE.contains(&flag.name) {
            return Err(format!(
                "--{} is given twice; give it once (only {} may repeat)",
                flag.name,
                REPEATABLE
                    .iter()
                    .map(|r| format!("--{r}"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
        match (flag.value, inline) {
            (None, None) => parsed.switches.push(flag.name),
            (None, Some(_)) => return Err(format!("--{} takes no value", flag.name)),
            (Some(_), Some(v)) => parsed.values.entry(flag.name).or_default().push(v),
            (Some(placeholder), None) => {
                let v = iter
                    .next()
                    .ok_or_else(|| format!("--{} needs a value ({placeholder})", flag.name))?;
                parsed.values.entry(flag.name).or_default().push(v.clone());
            }
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLAGS: &[Flag] = &[
        Flag::taking("port", "PORT", ""),
        Flag::switch("json", ""),
        Flag::taking("requirement", "R", ""),
    ];

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn flags_take_values_either_way_and_repeat() {
        let p = parse(
            "x",
            FLAGS,
            &args(&[
                "--port",
                "80",
                "--requirement=a",
                "--requirement",
                "b",
                "--json",
                "f",
            ]),
        )
        .unwrap();
        assert_eq!(p.value("port"), Some("80"));
        assert_eq!(p.values("requirement"), ["a", "b"]);
        assert!(p.switch("json"));
        assert_eq!(p.positionals, ["f"]);
    }

    #[test]
    fn an_unknown_flag_or_a_missing_value_is_a_usage_error() {
        assert!(
            parse("x", FLAGS, &args(&["--nope"]))
                .unwrap_err()
                .contains("unknown option --nope")
        );
        assert!(
            parse("x", FLAGS, &args(&["--port"]))
                .unwrap_err()
                .contains("needs a value")
        );
        assert!(
            parse("x", FLAGS, &args(&["--json=1"]))
                .unwrap_err()
                .contains("takes no value")
        );
    }

    #[test]
    fn a_flag_given_twice_is_refused_unless_it_repeats() {
        let err = parse("x", FLAGS, &args(&["--port", "1", "--port=2"])).unwrap_err();
        assert!(err.contains("--port is given twice"), "{err}");
        let err = parse("x", FLAGS, &args(&["--json", "--json"])).unwrap_err();
        assert!(err.contains("--json is given twice"), "{err}");
    }

    #[test]
    fn a_typo_gets_the_nearest_flag() {
        let err = parse("x", FLAGS, &args(&["--prot", "1"])).unwrap_err();
        assert!(err.contains("did you mean --port?"), "{err}");
        let err = parse("x", FLAGS, &args(&["--requirment", "r"])).unwrap_err();
        assert!(err.contains("did you mean --requirement?"), "{err}");
        let err = parse("x", FLAGS, &args(&["--zzzz"])).unwrap_err();
        assert!(!err.contains("did you mean"), "{err}");
        assert_eq!(nearest("inptu", ["input", "agent"]), Some("input"));
        assert_eq!(nearest("dmeo", ["demo", "serve"]), Some("demo"));
        assert_eq!(nearest("ser", ["demo", "serve"]), Some("serve"));
    }

    #[test]
    fn a_number_out_of_range_says_the_range() {
        let p = parse("x", FLAGS, &args(&["--port", "99999"])).unwrap();
        let err = p.number::<u16>("port").unwrap_err();
        assert_eq!(err, "--port must be from 0 to 65535, got 99999");
        let p = parse("x", FLAGS, &args(&["--port", "-1"])).unwrap();
        assert!(p.number::<u16>("port").unwrap_err().contains("0 to 65535"));
        let p = parse("x", FLAGS, &args(&["--port", "1.5"])).unwrap();
        assert!(
            p.number::<u16>("port")
                .unwrap_err()
                .contains("whole number")
        );
        let p = parse("x", FLAGS, &args(&["--port", "eighty"])).unwrap();
        assert!(
            p.number::<u16>("port")
                .unwrap_err()
                .contains("expects a number")
        );
    }

    #[test]
    fn a_dash_is_a_positional_and_a_double_dash_ends_flags() {
        let p = parse("x", FLAGS, &args(&["-", "--", "--json"])).unwrap();
        assert_eq!(p.positionals, ["-", "--json"]);
        assert!(!p.switch("json"));
    }
}
