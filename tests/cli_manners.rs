//! A newcomer's dead ends: each wrong turn gets a message that names the fix, and the command
//! line behaves as Unix tools do (a closed pipe ends quietly, exit codes a script can act on).

#[path = "common/synthetic.rs"]
mod synthetic;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ddwire() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ddwire"));
    for var in [
        "DD_PRINCIPAL_ID",
        "DD_PRINCIPAL_NAME",
        "DD_PRINCIPAL_KIND",
        "DD_AGENTS_CONFIG",
        "DD_PROFILE",
        "DD_RUNS_DIR",
    ] {
        c.env_remove(var);
    }
    c.stdin(Stdio::null());
    c
}

fn run(args: &[&str]) -> Output {
    ddwire().args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ddwire-manners-{tag}-{}", ddwire::ids::new_uuid7()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `args`, read stdout up to its first newline, close the pipe, and return the exit code
/// and stderr. Waits at most 60 s for the process to end.
fn read_one_line_and_hang_up(args: &[&str]) -> (Option<i32>, String) {
    let mut child = ddwire()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    loop {
        match stdout.read(&mut byte) {
            Ok(1) if byte[0] != b'\n' => continue,
            _ => break,
        }
    }
    drop(stdout);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("ddwire {args:?} did not end after its reader hung up");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code(), stderr)
}

/// Far more than a pipe holds (64 KiB on Linux), so the writer meets the closed pipe.
fn long_store(dir: &Path) {
    synthetic::store_of(dir, 3_000, false);
}

#[test]
fn runs_json_piped_into_head_ends_quietly_with_status_0() {
    let dir = temp_dir("pipe-runs");
    long_store(&dir);
    let (code, stderr) =
        read_one_line_and_hang_up(&["runs", "--json", "--runs", dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The literal pipeline, with pipefail so ddwire's own status counts.
    if Path::new("/bin/bash").exists() {
        let out = Command::new("/bin/bash")
            .args(["-o", "pipefail", "-c"])
            .arg(format!(
                "{} runs --json --runs {} | head -1",
                env!("CARGO_BIN_EXE_ddwire"),
                dir.display()
            ))
            .env_remove("DD_RUNS_DIR")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).lines().count(), 1);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn any_command_printing_into_a_closed_pipe_ends_quietly_with_status_0() {
    // `hash --canonical` prints one line as long as its input: a megabyte here.
    let dir = temp_dir("pipe-hash");
    let big = dir.join("big.json");
    let items: Vec<String> = (0..40_000).map(|i| format!("\"item {i:08}\"")).collect();
    std::fs::write(&big, format!("[{}]", items.join(","))).unwrap();
    let mut child = ddwire()
        .args(["hash", "--canonical", big.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 400];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // The pipe is closed as the reader drops; the command is still writing.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}
