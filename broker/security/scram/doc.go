// Package scram is SASL/SCRAM-SHA-256 and SCRAM-SHA-512 as Kafka's
// broker speaks them (RFC 5802 and RFC 7677 as Kafka's
// org.apache.kafka.common.security.scram classes implement them).
//
// It owns the mechanisms and their key derivation (Mechanism: Hi, the
// client, stored and server keys, signatures and proofs), the four
// messages with Kafka's grammar and refusals (ParseClientFirst and the
// others; only the "n,," gs2 header, no channel binding), the server side
// of an exchange as a state machine (Server: Start, then Finish, with
// errors that say how Kafka answers the client), the stored credential
// (Credential, NewCredential, and Kafka's credential string), the
// decisions of an AlterUserScramCredentials request (ValidateAlterations,
// as Kafka's controller), the kafka-storage format --add-scram argument
// (ParseAddScram, as Kafka's ScramParser), and the metadata records
// credentials are kept in (Record and RemoveRecord, byte for byte Kafka's
// UserScramCredentialRecord and RemoveUserScramCredentialRecord in its
// metadata log framing).
//
// The broker owns everything around it: the SaslHandshake and
// SaslAuthenticate requests, where credentials are stored and how a
// lookup finds them, and delegation tokens, of which this package only
// reports the client's tokenauth extension (Server.TokenAuth).
//
// No error, and nothing this package formats for a log, holds a password,
// salted password, key or proof.
//
// Imports: nothing of the project.
package scram
