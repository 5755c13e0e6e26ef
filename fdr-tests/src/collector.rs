//! A test OpenTelemetry collector: an OTLP/HTTP endpoint on 127.0.0.1 that answers each
//! connection as a script says (200, 503 with Retry-After, hang until released, cut), for the
//! exporter's tests.
//!
//! ```
//! use fdr_tests::collector::{Answer, Collector};
//! let c = Collector::start(&[Answer::Busy]);
//! assert!(c.url.starts_with("http://127.0.0.1:"));
//! assert!(c.accepted().is_empty());
//! ```

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the test collector does with one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Reads the request and answers 200 (full success).
    Ok,
    /// Reads the request and answers 503 with `Retry-After: 1`.
    Busy,
    /// Reads the request and answers nothing until released, then 200.
    Hang,
    /// Reads part of the request and closes the connection.
    Cut,
}

/// A collector on 127.0.0.1 whose first connections are answered as `script` says, the
/// others with 200. Its threads end with the test process.
pub struct Collector {
    pub url: String,
    /// The bodies answered with 200, in the order answered.
    accepted: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Connections taken.
    pub connections: Arc<AtomicUsize>,
    released: Arc<AtomicBool>,
}

impl Collector {
    pub fn start(script: &[Answer]) -> Collector {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let c = Collector {
            url,
            accepted: Arc::default(),
            connections: Arc::default(),
            released: Arc::default(),
        };
        let script = Arc::new(Mutex::new(script.iter().copied().collect::<VecDeque<_>>()));
        let (accepted, connections, released) = (
            c.accepted.clone(),
            c.connections.clone(),
            c.released.clone(),
        );
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { continue };
                let answer = script.lock().unwrap().pop_front().unwrap_or(Answer::Ok);
                connections.fetch_add(1, Ordering::SeqCst);
                let (accepted, released) = (accepted.clone(), released.clone());
                std::thread::spawn(move || serve(s, answer, &accepted, &released));
            }
        });
        c
    }

    /// Lets hung connections answer.
    pub fn release(&self) {
        self.released.store(true, Ordering::SeqCst);
    }

    pub fn accepted(&self) -> Vec<Vec<u8>> {
        self.accepted.lock().unwrap().clone()
    }
}

const OK: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n";

fn serve(mut s: TcpStream, answer: Answer, accepted: &Mutex<Vec<Vec<u8>>>, released: &AtomicBool) {
    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
    if answer == Answer::Cut {
        let mut some = [0u8; 16];
        let _ = s.read(&mut some);
        return;
    }
    let Some(body) = read_body(&mut s) else {
        return;
    };
    match answer {
        Answer::Busy => {
            let _ = s.write_all(BUSY);
            return;
        }
        Answer::Hang => {
            let until = Instant::now() + Duration::from_secs(60);
            while !released.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Answer::Ok | Answer::Cut => {}
    }
    if s.write_all(OK).is_ok() {
        accepted.lock().unwrap().push(body);
    }
}

/// The body of one HTTP request on `s`, checked to be an OTLP/HTTP protobuf export.
fn read_body(s: &mut TcpStream) -> Option<Vec<u8>> {
    let r = fdr_cli::testing::otlp::read_request(s)?;
    assert_eq!(r.line, "POST /v1/traces HTTP/1.1");
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    Some(r.body)
}
