//! `ddwire completions SHELL`: a completion script for bash, zsh or fish, made from the same
//! command and flag tables the parser reads, so it never lists a flag that does not exist.

use super::Command;
use super::args::Parsed;

pub(crate) static COMMAND: Command = Command {
    name: "completions",
    summary: "Print a shell completion script (bash, zsh or fish)",
    usage: "completions bash|zsh|fish",
    details: "Completes commands, each command's flags, and built-in agent names. Install it:\n  \
              bash: ddwire completions bash > ~/.local/share/bash-completion/completions/ddwire\n  \
              zsh:  ddwire completions zsh > \"${fpath[1]}/_ddwire\"   (then compinit)\n  \
              fish: ddwire completions fish > ~/.config/fish/completions/ddwire.fish",
    flags: &[],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let script = match args.words().as_slice() {
        ["bash"] => bash(),
        ["zsh"] => zsh(),
        ["fish"] => fish(),
        [other] => {
            let hint = super::args::did_you_mean(other, ["bash", "zsh", "fish"], "", "");
            return Err(format!(
                "no completions for {other:?}; {hint}choose bash, zsh or fish"
            ));
        }
        _ => return Err("expects one SHELL: bash, zsh or fish".into()),
    };
    out!("{script}");
    Ok(0)
}

/// Every flag of `c` as typed, `--help` included.
fn flags(c: &Command) -> Vec<String> {
    let mut flags: Vec<String> = c.flags.iter().map(|f| format!("--{}", f.name)).collect();
    flags.push("--help".into());
    flags
}

fn agent_names() -> String {
    crate::agent::builtin::NAMES
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(" ")
}

fn bash() -> String {
    let names: Vec<&str> = super::commands().iter().map(|c| c.name).collect();
    let cases: String = super::commands()
        .iter()
        .map(|c| format!("        {}) opts=\"{}\" ;;\n", c.name, flags(c).join(" ")))
        .collect();
    format!(
        r#"# bash completion for ddwire
_ddwire() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" cmd="${{COMP_WORDS[1]}}" opts=""
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "{commands} --help --version" -- "$cur"))
        return
    fi
    case "$cmd" in
{cases}    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [[ "$cmd" == agent && $COMP_CWORD -eq 2 ]]; then
        COMPREPLY=($(compgen -W "{agents}" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -F _ddwire ddwire
"#,
        commands = names.join(" "),
        agents = agent_names(),
    )
}

fn zsh() -> String {
    let mut commands = String::new();
    let mut cases = String::new();
    for c in super::commands() {
        commands.push_str(&format!(
            "        '{}:{}'\n",
            c.name,
            c.summary.replace('\'', "'\\''").replace(':', "\\:")
        ));
        let flags: Vec<String> = flags(c).iter().map(|f| format!("'{f}[]'")).collect();
        cases.push_str(&format!(
            "        {}) _arguments '*:file:_files' {} ;;\n",
            c.name,
            flags.join(" ")
        ));
    }
    format!(
        r#"#compdef ddwire
_ddwire() {{
    local -a commands
    commands=(
{commands}    )
    if (( CURRENT == 2 )); then
        _describe 'command' commands
        return
    fi
    if [[ $words[2] == agent && CURRENT == 3 ]]; then
        compadd {agents}
        return
    fi
    case $words[2] in
{cases}    esac
}}
_ddwire "$@"
"#,
        agents = agent_names(),
    )
}

fn fish() -> String {
    let mut out = String::from("# fish completion for ddwire\ncomplete -c ddwire -f\n");
    for c in super::commands() {
        out.push_str(&format!(
            "complete -c ddwire -n __fish_use_subcommand -a {} -d '{}'\n",
            c.name,
            c.summary.replace('\'', "\\'")
        ));
        for f in c.flags {
            out.push_str(&format!(
                "complete -c ddwire -n '__fish_seen_subcommand_from {}' -l {} -d '{}'{}\n",
                c.name,
                f.name,
                f.help.replace('\'', "\\'"),
                if f.value.is_some() { " -r -F" } else { "" }
            ));
        }
    }
    out.push_str(&format!(
        "complete -c ddwire -n '__fish_seen_subcommand_from agent' -a '{}'\n",
        agent_names()
    ));
    out
}
