// Package credentials holds the secrets Airlock uses on its roles' behalf
// and is the only code that reads them (issue 12 item 7, seed 001
// decision 4).
//
// A credential (config "credentials:") has an id, a secret source (an
// environment variable or a file, [config.TokenSource]), the roles whose
// calls may use it, and where it is injected: an HTTP header on comm.fetch
// requests to named hosts ([Set.ForHosts], used inside comm's request loop
// for each hop on its own), and/or an environment variable of named
// pipelines ([Set.PipelineEnv], put into the sandbox spec); and on the
// calls to named upstreams, as a header or a stdio upstream's variable,
// with an upstream's token exchange obtained through the runner's
// [Exchanger] ([Set.ForUpstream], issue 23 item 3).
//
// Invariants:
//
//   - The secret is read at each use, never cached, so changing or
//     removing the file (or reloading the configuration) takes effect on
//     the next call without a restart. A file that is missing or empty,
//     or an unset variable, revokes the credential: the use fails with
//     [ErrRevoked] (the call is refused, fail closed: a request is not
//     sent without the credential it was configured with, a pipeline does
//     not run without its variable).
//   - A state change (revoked, restored) is reported once to the
//     [Options.OnChange] hook, with the id and a reason — never the value
//     — which the runner writes to the audit trail.
//   - Only the id ever leaves the package in text: errors, changes and
//     the [Scrubber]'s marker [REDACTED:credential:<id>] name it; the
//     value is never formatted into an error, a log line or a record.
//   - Everything that leaves the boundary after a use passes a
//     [Scrubber]: the fetched text, a pipeline's stdout and stderr have
//     every injected secret replaced by its marker; an output file that
//     contains one is refused ([Scrubber.Find]). A secret shorter than
//     [MinSecretBytes] is refused as invalid: scanning for it would be
//     meaningless. What Airlock itself would re-form is caught too (issue
//     26, item 5): the fence scrubs its text after sanitizing
//     (fence.Meta.Scrub), and Find also reads an output as the sanitizer
//     shows it, so a secret split by characters the sanitizer removes
//     (U+200B, U+00AD, escape sequences) is found.
//
// Limits: a scrubber finds the secret as injected (and in the header
// template's rendering), not transformed — a pipeline that prints it
// base64-encoded, reversed, split by visible characters or across lines
// gets it out. Give pipelines credentials only when the pipeline itself is
// trusted code.
package credentials
