//! A small hand-written argument parser: flags declared per command, `--flag value` or
//! `--flag=value`, repeatable flags, `--` to end flags, `-` as a positional (stdin).

use std::collections::HashMap;

/// One flag a command accepts.
pub struct Flag {
    /// `--name`, without the dashes.
    pub name: &'static str,
    /// The value's placeholder (`PORT`), or `None` for a switch.
    pub value: Option<&'static str>,
    /// One line of help.
    pub help: &'static str,
}

/// What a command line said, after checking it against the command's flags.
#[derive(Debug, Default)]
pub struct Parsed {
    values: HashMap<&'static str, Vec<String>>,
    switches: Vec<&'static str>,
    /// Positional arguments, in order.
    pub positionals: Vec<String>,
}

impl Parsed {
    /// The last value given for `--name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// Every value given for a repeatable `--name`.
    pub fn values(&self, name: &str) -> &[String] {
        self.values.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Whether the switch `--name` was given.
    pub fn switch(&self, name: &str) -> bool {
        self.switches.contains(&name)
    }

    /// `--name` parsed as a number, with a clear message when it is not one.
    pub fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        match self.value(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("--{name} expects a number, got {v:?}")),
        }
    }
}

/// Parse `args` (after the command name) against `flags`. `Err` is a usage message.
pub fn parse(command: &str, flags: &[Flag], args: &[String]) -> Result<Parsed, String> {
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
            format!("unknown option {arg} for `ddwire {command}`; see `ddwire {command} --help`")
        })?;
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
        Flag {
            name: "port",
            value: Some("PORT"),
            help: "",
        },
        Flag {
            name: "json",
            value: None,
            help: "",
        },
        Flag {
            name: "requirement",
            value: Some("R"),
            help: "",
        },
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
    fn a_dash_is_a_positional_and_a_double_dash_ends_flags() {
        let p = parse("x", FLAGS, &args(&["-", "--", "--json"])).unwrap();
        assert_eq!(p.positionals, ["-", "--json"]);
        assert!(!p.switch("json"));
    }
}
