// Package tracing owns Airlock's OpenTelemetry traces (issue 12 item 3):
// the exporter's setup from the configuration and the OTEL_* variables,
// the W3C trace context taken from a request's params._meta, and the one
// span each governed call gets, with its runner steps as child spans.
//
// Off by default: [New] returns a nil *Tracer unless tracing.enabled is
// set, OTEL_TRACES_EXPORTER is "otlp", or an OTLP endpoint variable is
// set; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off
// whatever the configuration says. Every method is a no-op on a nil
// *Tracer and [Tracer.Start] returns a nil *Call, so a server without
// tracing pays one nil check per call (BENCHMARKS.md).
//
// What a span carries is server-chosen only, never an argument value or a
// secret: the MCP semantic-convention attributes (mcp.method.name,
// mcp.session.id, gen_ai.tool.name for one of Airlock's own tools,
// gen_ai.operation.name, jsonrpc.request.id, network.transport,
// error.type = the violation code) and Airlock's decision, rule id,
// outcome, tier, phase and audit sequence number. The capability is left
// out (a pipeline's capability names what the agent asked for) and so is
// the principal. TestSpansOfRealCalls greps every exported attribute for
// the arguments it sent.
//
// The caller's trace context: a "traceparent" (and "tracestate") string
// in params._meta ([Extract]) makes the call's span a child of the
// caller's; a malformed or oversized one is ignored (a new trace starts),
// never an error to the agent (FuzzExtract).
//
// Limits: the exporter is OTLP over HTTP (protobuf) only; settings are
// read when the server starts (a reload does not change them); spans are
// batched and a process killed hard loses the batch in flight.
package tracing
