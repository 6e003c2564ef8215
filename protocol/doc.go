// Package protocol is the thin layer between a socket and the broker's
// handlers: it reads size-prefixed frames, parses request headers (v1 and the
// flexible v2 with tagged fields), knows which (API key, version) pairs use
// flexible encodings, and writes size-prefixed response frames.
//
// Message bodies are encoded and decoded by github.com/twmb/franz-go/pkg/kmsg;
// this package never hand-writes a request or response struct. Record batches
// live in the subpackage protocol/batch.
//
// protocol holds no broker state and imports nothing else of the project.
//
// A request frame on the wire:
//
//	+-------------+---------+-------------+----------------+-----------+---------------+------+
//	| size int32  | api key | api version | correlation id | client id | tagged fields | body |
//	| (excl. self)| int16   | int16       | int32          | nullable  | (header v2    |      |
//	|             |         |             |                | string16  |  only)        |      |
//	+-------------+---------+-------------+----------------+-----------+---------------+------+
//
// A response frame is size, correlation id, tagged fields (header v1, used when
// the response is flexible, except for ApiVersions whose response header is
// always v0), then the body.
package protocol
