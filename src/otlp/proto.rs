//! The few OTLP protobuf messages a trace export needs, encoded by hand
//! (docs/design/otel.md#encoding): a dependency on `opentelemetry-proto` brings tonic, tokio and
//! prost into a cold build for four messages (BENCHMARKS.md#otlp-encoding).
//!
//! Field numbers are those of opentelemetry-proto v1 (`collector/trace/v1/trace_service.proto`,
//! `trace/v1/trace.proto`, `common/v1/common.proto`, `resource/v1/resource.proto`):
//! - ExportTraceServiceRequest: resource_spans = 1
//! - ResourceSpans: resource = 1, scope_spans = 2; Resource: attributes = 1
//! - ScopeSpans: scope = 1, spans = 2; InstrumentationScope: name = 1, version = 2
//! - Span: trace_id = 1, span_id = 2, parent_span_id = 4, name = 5, kind = 6,
//!   start_time_unix_nano = 7 (fixed64), end_time_unix_nano = 8 (fixed64), attributes = 9,
//!   events = 11, status = 15
//! - Span.Event: time_unix_nano = 1 (fixed64), name = 2, attributes = 3
//! - Status: message = 2, code = 3 (0 unset, 1 ok, 2 error)
//! - KeyValue: key = 1, value = 2; AnyValue: string_value = 1, bool_value = 2,
//!   int_value = 3, double_value = 4, array_value = 5; ArrayValue: values = 1

use super::spans::{Span, SpanEvent, Value};

/// protobuf wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn tag(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from(field << 3 | wire));
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    tag(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
    tag(out, field, VARINT);
    varint(out, v);
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    tag(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

/// A nested message: `fill` writes its fields.
fn message(out: &mut Vec<u8>, field: u32, fill: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    fill(&mut inner);
    bytes(out, field, &inner);
}

fn any_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Str(s) => bytes(out, 1, s.as_bytes()),
        Value::Bool(b) => uint(out, 2, u64::from(*b)),
        // int64 as a varint: two's complement, so a negative value takes ten bytes.
        Value::Int(i) => uint(out, 3, *i as u64),
        Value::Double(d) => fixed64(out, 4, d.to_bits()),
        Value::StrList(items) => message(out, 5, |arr| {
            for s in items {
                message(arr, 1, |any| bytes(any, 1, s.as_bytes()));
            }
        }),
    }
}

fn attributes(out: &mut Vec<u8>, field: u32, attrs: &[(String, Value)]) {
    for (key, value) in attrs {
        message(out, field, |kv| {
            bytes(kv, 1, key.as_bytes());
            message(kv, 2, |any| any_value(any, value));
        });
    }
}

fn event(out: &mut Vec<u8>, ev: &SpanEvent) {
    message(out, 11, |e| {
        fixed64(e, 1, ev.time_ns);
        bytes(e, 2, ev.name.as_bytes());
        attributes(e, 3, &ev.attrs);
    });
}

fn span(out: &mut Vec<u8>, trace_id: &[u8; 16], s: &Span) {
    message(out, 2, |m| {
        bytes(m, 1, trace_id);
        bytes(m, 2, &s.span_id);
        if let Some(parent) = &s.parent {
            bytes(m, 4, parent);
        }
        bytes(m, 5, s.name.as_bytes());
        uint(m, 6, s.kind as u64);
        fixed64(m, 7, s.start_ns);
        fixed64(m, 8, s.end_ns.max(s.start_ns));
        attributes(m, 9, &s.attrs);
        for ev in &s.events {
            event(m, ev);
        }
        if let Some(error) = &s.error {
            message(m, 15, |st| {
                bytes(st, 2, error.as_bytes());
                uint(st, 3, 2);
            });
        }
    });
}

/// An `ExportTraceServiceRequest` holding `spans` of one trace, from one resource and scope.
pub fn export_request(
    trace_id: &[u8; 16],
    resource: &[(String, Value)],
    spans: &[Span],
) -> Vec<u8> {
    let mut out = Vec::new();
    message(&mut out, 1, |rs| {
        message(rs, 1, |r| attributes(r, 1, resource));
        message(rs, 2, |ss| {
            message(ss, 1, |scope| {
                bytes(scope, 1, env!("CARGO_PKG_NAME").as_bytes());
                bytes(scope, 2, env!("CARGO_PKG_VERSION").as_bytes());
            });
            for s in spans {
                span(ss, trace_id, s);
            }
        });
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_little_endian_groups_of_seven_bits() {
        let enc = |v| {
            let mut out = Vec::new();
            varint(&mut out, v);
            out
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(1), [1]);
        assert_eq!(enc(127), [0x7f]);
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(enc(u64::MAX).len(), 10);
    }

    #[test]
    fn a_string_attribute_is_a_key_value_message() {
        let mut out = Vec::new();
        attributes(&mut out, 9, &[("k".into(), Value::Str("v".into()))]);
        // field 9 LEN, 8 bytes: key (field 1 "k"), value (field 2: AnyValue{string_value "v"}).
        assert_eq!(out, [0x4a, 8, 0x0a, 1, b'k', 0x12, 3, 0x0a, 1, b'v']);
    }
}
