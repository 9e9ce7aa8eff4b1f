//! Listings that stream: `GET /runs` and `ddwire runs` page through the index newest first,
//! with filters, in memory that stays flat whatever the store's size (proven over 100,000
//! runs), and a unique prefix names a run wherever an id does.

use ddwire::harness::store::{Query, RunReader, parse_time};
use ddwire::harness::testkit::HARNESS_URL;
use ddwire::wire::a2a::client::A2aClient;
use ddwire::wire::http::client::ClientRequest;
use serde_json::{Value, json};
use std::ops::ControlFlow;
use std::process::Command;

use super::synthetic;

use synthetic::{Dir, T, harness, line, store_of};

fn get(client: &A2aClient, path: &str) -> (u16, Option<String>, Value) {
    let r = client
        .http
        .send(ClientRequest::get(format!("{HARNESS_URL}{path}"), T))
        .unwrap();
    let link = r.header("link").map(str::to_string);
    let body = serde_json::from_slice(&r.body)
        .unwrap_or_else(|e| panic!("{path}: {e}: {}", String::from_utf8_lossy(&r.body)));
    (r.status, link, body)
}

/// The shortest prefix of `ids[i]` no other id shares.
fn unique_prefix(ids: &[String], i: usize) -> String {
    let id = &ids[i];
    (1..=id.len())
        .map(|n| &id[..n])
        .find(|p| ids.iter().filter(|other| other.starts_with(p)).count() == 1)
        .unwrap()
        .to_string()
}

fn ids_of(rows: &Value) -> Vec<String> {
    rows.as_array()
        .unwrap_or_else(|| panic!("not an array: {rows}"))
        .iter()
        .map(|r| r["invocation_id"].as_str().unwrap().to_string())
        .collect()
}

/// Pages of 7 through 300 runs give every run once, newest first, whether the next page is
/// asked for by the cursor or by the id alone; every filter gives what a plain filter of the
/// whole list gives.
#[test]
fn pages_and_filters_go_through_the_index_newest_first() {
    let dir = Dir::new("pages");
    let ids = store_of(&dir.0, 300, false);
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    let reader = RunReader::open(&dir.0).unwrap();

    for by_id_only in [false, true] {
        let mut query = Query {
            limit: Some(7),
            ..Query::default()
        };
        let mut seen = Vec::new();
        loop {
            let page = reader.page(&query).unwrap();
            assert!(page.rows.len() <= 7);
            seen.extend(
                page.rows
                    .iter()
                    .map(|r| r["invocation_id"].as_str().unwrap().to_string()),
            );
            let Some(next) = page.next else { break };
            query.after = Some(next.after);
            query.at = (!by_id_only).then_some(next.at);
        }
        assert_eq!(seen, newest_first);
    }

    let all: Vec<Value> = (0..300)
        .map(|i| serde_json::from_str(&line(i, &ids[i])).unwrap())
        .collect();
    let since = parse_time("2026-01-01T00:02:00Z").unwrap();
    let until = parse_time("2026-01-01T00:04:00Z").unwrap();
    let queries = [
        Query {
            agent_id: Some("echo.wire".into()),
            ..Query::default()
        },
        Query {
            status: Some("referred".into()),
            ..Query::default()
        },
        Query {
            principal: Some("Ada Lovelace".into()),
            ..Query::default()
        },
        Query {
            principal: Some("https://orcid.org/0000-0001-5109-3700".into()),
            ..Query::default()
        },
        Query {
            conversation_id: Some(format!("019c0000-0000-7000-8000-{:012x}", 7)),
            ..Query::default()
        },
        Query {
            since: Some(since),
            until: Some(until),
            agent_id: Some("hello".into()),
            ..Query::default()
        },
    ];
    for query in queries {
        let want: Vec<String> = all
            .iter()
            .rev()
            .filter(|e| query.matches(e))
            .map(|e| e["invocation_id"].as_str().unwrap().to_string())
            .collect();
        assert!(!want.is_empty(), "{query:?}");
        let mut got = Vec::new();
        reader
            .rows_newest_first(&query, |_, row| {
                got.push(row["invocation_id"].as_str().unwrap().to_string());
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(got, want, "{query:?}");
    }
    // A time window: runs 120 to 239 completed in it.
    let window = Query {
        since: Some(since),
        until: Some(until),
        ..Query::default()
    };
    let mut count = 0;
    reader
        .rows_newest_first(&window, |_, _| {
            count += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(count, 120);
}

/// `GET /runs?limit=` answers one page and a `Link` to the next; without `limit` it streams
/// every row as one array; bad parameters are a 400 that says what is accepted. A unique prefix
/// names a run on every route; an ambiguous one is a 409 naming candidates.
#[test]
fn the_runs_route_pages_streams_filters_and_takes_prefixes() {
    let dir = Dir::new("route");
    let ids = store_of(&dir.0, 60, true);
    let (_harness, _net, client) = harness(&dir.0);
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();

    let (status, _, all) = get(&client, "/runs");
    assert_eq!(status, 200);
    assert_eq!(ids_of(&all), newest_first);
    assert_eq!(
        all[0],
        json!({"invocation_id": newest_first[0], "agent_id": "director", "status": "referred",
               "completed_at": "2026-01-01T00:00:59.000000Z", "acting_for": "Josiah Carberry"})
    );

    let mut path = "/runs?limit=25&agent=hello".to_string();
    let mut paged = Vec::new();
    loop {
        let (status, link, rows) = get(&client, &path);
        assert_eq!(status, 200, "{path}");
        paged.extend(ids_of(&rows));
        let Some(link) = link else { break };
        assert!(link.ends_with(">; rel=\"next\""), "{link}");
        path = link
            .trim_start_matches('<')
            .split('>')
            .next()
            .unwrap()
            .to_string();
        assert!(path.contains("agent=hello"), "{path}");
    }
    let hello: Vec<String> = (0..60)
        .rev()
        .filter(|i| i % 3 == 0)
        .map(|i| ids[i].clone())
        .collect();
    assert_eq!(paged, hello);

    let (_, _, after) = get(
        &client,
        &format!("/runs?limit=2&after={}", unique_prefix(&ids, 50)),
    );
    assert_eq!(ids_of(&after), newest_first[10..12].to_vec());
    let (_, _, by_who) = get(
        &client,
        "/runs?principal=https%3A%2F%2Forcid.org%2F0000-0001-5109-3700&status=succeeded",
    );
    assert_eq!(
        ids_of(&by_who),
        (0..60)
            .rev()
            .filter(|i| i % 20 == 0)
            .map(|i| ids[i].clone())
            .collect::<Vec<_>>()
    );

    for (bad, says) in [
        ("/runs?limit=0", "limit=0: give a number from 1 to 1000"),
        ("/runs?limit=5000", "from 1 to 1000"),
        ("/runs?sort=asc", "unknown query parameter sort"),
        ("/runs?since=yesterday", "since=yesterday is not a time"),
        ("/runs?agent=a&agent=b", "more than once"),
    ] {
        let (status, _, body) = get(&client, bad);
        assert_eq!(status, 400, "{bad}");
        assert!(
            body["error"].as_str().unwrap().contains(says),
            "{bad}: {body}"
        );
    }

    let id = &ids[17];
    let prefix = unique_prefix(&ids, 17);
    assert!(prefix.len() < 36);
    for path in [
        format!("/runs/{prefix}"),
        format!("/runs/{}/spans", id.to_uppercase()),
    ] {
        let r = client
            .http
            .send(ClientRequest::get(format!("{HARNESS_URL}{path}"), T))
            .unwrap();
        assert_ne!(r.status, 409, "{path}");
        assert_ne!(r.status, 400, "{path}");
    }
    let (status, _, env) = get(&client, &format!("/runs/{prefix}"));
    assert_eq!(
        (status, env["invocation_id"].as_str()),
        (200, Some(id.as_str()))
    );
    let shared: String = ids[0].chars().take(4).collect();
    let (status, _, body) = get(&client, &format!("/runs/{shared}"));
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["candidates"].as_array().unwrap().len(), 10);
    assert!(
        body["error"].as_str().unwrap().contains("matches 60 runs"),
        "{body}"
    );
    let (status, _, body) = get(&client, "/runs/ffff");
    assert_eq!(status, 404, "{body}");
}

/// `ddwire runs --limit` prints that many and says how to get the next page.
#[test]
fn the_runs_command_pages_and_filters() {
    let dir = Dir::new("cli");
    let ids = store_of(&dir.0, 12, false);
    let runs = |args: &[&str]| {
        Command::new(super::ddwire_exe())
            .arg("runs")
            .args(args)
            .arg("--runs")
            .arg(&dir.0)
            .output()
            .unwrap()
    };
    let out = runs(&["--limit", "5", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0]["invocation_id"], ids[11].as_str());
    let hint = String::from_utf8(out.stderr).unwrap();
    assert!(hint.contains(&format!("--after {}", ids[7])), "{hint}");
    let out = runs(&["--after", &ids[7], "--status", "succeeded"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let listed: Vec<&str> = text
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(listed, vec![ids[4].as_str(), ids[0].as_str()]);
    let out = runs(&["--since", "tomorrow"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a time"));
}
