//! A `tracing` user's program, recorded by fdr without touching its code: a small tokio TCP
//! service whose handlers carry `#[tracing::instrument]`, one request of which is slow.
//!
//! ```text
//! cargo run --release -p fdr-examples --bin tracing_service [LOG]
//! ```
//!
//! The service answers `GET <key>` lines with the key's value; a client in the same process
//! opens a few connections and sends requests on each. The lookup of one key waits 30 ms (a
//! stuck disk read). The only lines about fdr are in `main`: one layer added to the registry, a
//! recorder started with a 10 ms trigger on the lookup span. The slow lookup fires it, the
//! recorder writes the window by itself (`LOG`'s stem with `-1`, `tracing_service-1.fdr` by
//! default), and `fdr calls` shows the slow request's span tree: the connection's poll, the
//! request, and the lookup inside it.

use std::error::Error;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tracing_subscriber::layer::SubscriberExt;

const CONNECTIONS: u64 = 4;
const REQUESTS_PER_CONNECTION: u64 = 50;
/// The key whose lookup is slow.
const SLOW_KEY: u64 = 137;

/// One connection: a request per line, an answer per request.
#[tracing::instrument(skip(stream))]
async fn serve(stream: TcpStream, peer: SocketAddr) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Some(line) = lines.next_line().await? {
        let answer = handle(&line);
        write.write_all(answer.as_bytes()).await?;
    }
    Ok(())
}

#[tracing::instrument]
fn handle(line: &str) -> String {
    match parse(line) {
        Some(key) => render(key, lookup(key)),
        None => "ERR bad request\n".to_string(),
    }
}

#[tracing::instrument]
fn parse(line: &str) -> Option<u64> {
    line.strip_prefix("GET ")?.trim().parse().ok()
}

#[tracing::instrument]
fn lookup(key: u64) -> u64 {
    if key == SLOW_KEY {
        // The one slow request: a read that waits on a disk.
        std::thread::sleep(Duration::from_millis(30));
    }
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40
}

#[tracing::instrument]
fn render(key: u64, value: u64) -> String {
    format!("OK {key} {value}\n")
}

/// A client: `REQUESTS_PER_CONNECTION` requests on one connection, each answer awaited.
async fn client(addr: SocketAddr, connection: u64) -> std::io::Result<u64> {
    let stream = TcpStream::connect(addr).await?;
    let (read, mut write) = stream.into_split();
    let mut answers = BufReader::new(read).lines();
    let mut ok = 0;
    for i in 0..REQUESTS_PER_CONNECTION {
        let key = connection * REQUESTS_PER_CONNECTION + i;
        write.write_all(format!("GET {key}\n").as_bytes()).await?;
        let answer = answers.next_line().await?.unwrap_or_default();
        ok += u64::from(answer.starts_with("OK "));
    }
    Ok(ok)
}

async fn run() -> Result<u64, Box<dyn Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, peer)) = listener.accept().await {
            tokio::spawn(serve(stream, peer));
        }
    });
    let clients: Vec<_> = (0..CONNECTIONS)
        .map(|c| tokio::spawn(client(addr, c)))
        .collect();
    let mut ok = 0;
    for c in clients {
        ok += c.await??;
    }
    Ok(ok)
}

fn main() -> Result<(), Box<dyn Error>> {
    let log = PathBuf::from(
        std::env::args_os()
            .nth(1)
            .unwrap_or_else(|| "tracing_service.fdr".into()),
    );
    // fdr's part: the layer, and a recorder whose trigger names the lookup span.
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(fdr_tracing::layer()),
    )?;
    let recorder = fdr::start(
        fdr::Config::default()
            .out(&log)
            .trigger("tracing_service::lookup", Duration::from_millis(10)),
    )?;

    let ok = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run())?;
    println!(
        "tracing_service: {ok} of {} requests answered",
        CONNECTIONS * REQUESTS_PER_CONNECTION
    );

    // The trigger's window is written by fdr's background writer; give it a moment.
    let snapshot = log.with_file_name(format!(
        "{}-1.fdr",
        log.file_stem().unwrap_or_default().to_string_lossy()
    ));
    for _ in 0..300 {
        if snapshot.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    recorder.finish(&log)?;
    if !snapshot.exists() {
        return Err(format!("the slow lookup's trigger wrote no {}", snapshot.display()).into());
    }
    println!(
        "tracing_service: the slow lookup passed its 10 ms trigger; the recorder wrote {} by itself",
        snapshot.display()
    );
    println!();
    let mut stdout = std::io::stdout();
    fdr_cli::run(
        &[
            "calls".into(),
            "--top".into(),
            "1".into(),
            snapshot.to_string_lossy().into_owned(),
        ],
        &mut stdout,
    )?;
    Ok(())
}
