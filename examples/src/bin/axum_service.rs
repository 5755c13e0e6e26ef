//! A web service as one is written with axum, every handler annotated: what a new user copies.
//!
//! ```text
//! cargo run --release -p fdr-examples --bin axum_service [LOG]
//! ```
//!
//! A JSON API of stock quotes: `GET /quote/{symbol}?currency=EUR` reads the symbol and the query
//! through extractors and asks a downstream price service (in the same process here) for the
//! price; one symbol, `SLOW`, makes the downstream wait 40 ms. A middleware times every request.
//! A client in the same process sends a few dozen requests, one of them for `SLOW`.
//!
//! fdr's part: `#[fdr::instrument_fdr]` on the handlers, the middleware and the downstream call;
//! `log_args(symbol, currency)` on the handler, which logs the names its extractor patterns bind
//! (`Path(symbol)`, `Query(QuoteQuery { currency })`), text included; and a recorder whose
//! trigger names the downstream call by its short name (`fetch_price`, as `fdr calls
//! --function` takes it). `FDR_OPTIONS`, when set, replaces that configuration. The slow request
//! fires the trigger; the recorder writes the window by itself (`LOG`'s stem with `-1`), and
//! `fdr calls` shows the slow request, its arguments and where its time went.

use std::error::Error;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const REQUESTS: u64 = 40;
/// The symbol whose price the downstream is slow to give.
const SLOW: &str = "SLOW";

/// What the handlers share.
#[derive(Default)]
struct Prices {
    asked: AtomicU64,
}

#[derive(Deserialize)]
struct QuoteQuery {
    #[serde(default = "dollars")]
    currency: String,
}

fn dollars() -> String {
    "USD".to_string()
}

#[derive(Serialize)]
struct QuoteAnswer {
    symbol: String,
    currency: String,
    price_cents: u64,
}

/// The downstream price service: a client library's call, as far as the handler knows.
#[fdr::instrument_fdr]
async fn fetch_price(symbol: &str) -> u64 {
    let wait = if symbol == SLOW { 40 } else { 1 };
    tokio::time::sleep(Duration::from_millis(wait)).await;
    symbol.bytes().map(u64::from).sum::<u64>() * 37
}

/// `GET /quote/{symbol}`: the extractors' patterns bind what `log_args` logs.
#[fdr::instrument_fdr(log_args(symbol, currency))]
async fn quote(
    State(prices): State<Arc<Prices>>,
    Path(symbol): Path<String>,
    Query(QuoteQuery { currency }): Query<QuoteQuery>,
) -> Result<Json<QuoteAnswer>, StatusCode> {
    if symbol.is_empty() || symbol.len() > 8 {
        return Err(StatusCode::BAD_REQUEST);
    }
    prices.asked.fetch_add(1, Ordering::Relaxed);
    let price_cents = fetch_price(&symbol).await;
    Ok(Json(QuoteAnswer {
        symbol,
        currency,
        price_cents,
    }))
}

/// `GET /health`.
#[fdr::instrument_fdr]
async fn health() -> impl IntoResponse {
    "ok"
}

/// A middleware around every request, as `from_fn` takes one.
#[fdr::instrument_fdr]
async fn timing(request: Request, next: Next) -> Response {
    next.run(request).await
}

fn app(prices: Arc<Prices>) -> Router {
    Router::new()
        .route("/quote/{symbol}", get(quote))
        .route("/health", get(health))
        .layer(middleware::from_fn(timing))
        .with_state(prices)
}

/// One HTTP/1.1 request on a connection of its own; the status code of the answer.
async fn get_status(addr: SocketAddr, path: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0))
}

async fn run() -> Result<u64, Box<dyn Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move { axum::serve(listener, app(Arc::default())).await });
    let mut ok = 0;
    for i in 0..REQUESTS {
        let path = match i {
            0 => "/health".to_string(),
            20 => format!("/quote/{SLOW}?currency=EUR"),
            i => format!("/quote/SYM{i}?currency=EUR"),
        };
        ok += u64::from(get_status(addr, &path).await? == 200);
    }
    server.abort();
    Ok(ok)
}

fn main() -> Result<(), Box<dyn Error>> {
    let log = PathBuf::from(
        std::env::args_os()
            .nth(1)
            .unwrap_or_else(|| "axum_service.fdr".into()),
    );
    // fdr's part: FDR_OPTIONS when it is set, else a trigger on the downstream call, named as
    // `fdr calls --function` names it.
    let config = fdr::Config::from_env()?.unwrap_or_else(|| {
        fdr::Config::default()
            .out(&log)
            .trigger("fetch_price", Duration::from_millis(20))
    });
    let recorder = fdr::start(config)?;

    let ok = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run())?;
    println!("axum_service: {ok} of {REQUESTS} requests answered");

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
    if !fdr::ENABLED {
        return Ok(());
    }
    if !snapshot.exists() {
        return Err(format!("the slow request's trigger wrote no {}", snapshot.display()).into());
    }
    println!(
        "axum_service: the {SLOW} request's downstream call passed its 20 ms trigger; the \
         recorder wrote {} by itself",
        snapshot.display()
    );
    println!();
    let mut stdout = std::io::stdout();
    fdr_cli::run(
        &[
            "calls".into(),
            "--function".into(),
            "quote".into(),
            "--top".into(),
            "1".into(),
            snapshot.to_string_lossy().into_owned(),
        ],
        &mut stdout,
    )?;
    Ok(())
}
