"""Every error code :mod:`vxp` raises, and the three error classes that carry them.

:data:`CODES` is the one table of the package's codes (name, kind, stage, sentence), in stage
order; ``docs/codes/vxp.md`` is generated from it (``tools/gen_code_docs.py``). An error is
built as ``VxpError(code, message)``: the table decides its class.

- :class:`VxpUsageError`: the caller's own mistake (a key the caller holds, ``now``, an
  option, a store URL, a callback, a file path).
- :class:`VxpProtocolError`: data from a peer is bad (a package, a statement, an SD-JWT, a
  checkpoint, a proof, issuer metadata), whatever its Python type.

Both derive from :class:`VxpError`, a :class:`ValueError`. ``code`` names the failing check
and ``stage`` its stage; an earlier stage's code is reported before a later one's, so a later
stage never masks an earlier one. ``reason`` is an optional finer, equally stable code (open:
:attr:`vxp.Verdict.failure` carries the precise check there).
"""

from __future__ import annotations

from _ppcodes import Code, CodedError, CodeTable

__all__ = ["CODES", "VxpError", "VxpProtocolError", "VxpUsageError"]


def _u(name: str, stage: str, sentence: str) -> Code:
    return Code(name, "usage", stage, sentence)


def _p(name: str, stage: str, sentence: str) -> Code:
    return Code(name, "protocol", stage, sentence)


CODES = CodeTable(
    "vxp",
    [
        # ---- usage: the caller's arguments, configuration and environment
        _u("time_naive", "call", "A time the caller passes (`now`, `at`) is a naive datetime."),
        _u(
            "now_invalid",
            "call",
            "`now` (or a time to sign) is neither an aware datetime with a UTC value (a "
            "`tzinfo` that answers, years 1 to 9999 in UTC) nor a finite number of seconds "
            "since the epoch in the range the call accepts.",
        ),
        _u(
            "argument_invalid",
            "call",
            "An argument is not of the type the call takes (a list that is not iterable, a "
            "flag that is not a bool, an object without the methods the call uses).",
        ),
        _u("leeway_invalid", "call", "`leeway` is not an integer number of seconds in range."),
        _u("max_statements_invalid", "call", "`max_statements` is not an integer in range."),
        _u(
            "algorithms_invalid",
            "call",
            "The algorithm allow-list is empty or names "
            "`none` or an algorithm that is not implemented.",
        ),
        _u(
            "key_binding_invalid",
            "call",
            "The key-binding policy (`aud`, `nonce`, "
            "`max_age`, `leeway`) has a value of the wrong type or range.",
        ),
        _u("typ_invalid", "call", "The `typ` to issue with is not a non-empty string."),
        _u("decoys_invalid", "call", "The number of decoy digests is not an integer from 0 to 64."),
        _u(
            "random_source_invalid",
            "call",
            "The random source did not return the 16 bytes asked for.",
        ),
        _u(
            "sd_path_invalid",
            "call",
            "A claim path to make disclosable is not a list of "
            "names and indexes, is empty, is listed twice or does not exist.",
        ),
        _u(
            "disclose_path_unknown",
            "call",
            "A path to disclose matches no disclosure of the SD-JWT.",
        ),
        _u(
            "holder_key_missing",
            "call",
            "Key-binding claims (`aud`, `nonce`, `iat`) are given without a holder key.",
        ),
        _u(
            "kb_claims_invalid",
            "call",
            "Key binding needs `aud` and `nonce` strings and an integer `iat`.",
        ),
        _u(
            "holder_key_mismatch", "call", "The holder key is not the key the SD-JWT's `cnf` names."
        ),
        _u(
            "key_invalid",
            "call",
            "A key the caller holds is not a valid JWK or key "
            "object (wrong encoding, a point off the curve, a `d` of another key).",
        ),
        _u(
            "key_unsupported",
            "call",
            "A key the caller holds is neither P-256 (ES256) nor Ed25519 (EdDSA).",
        ),
        _u("key_not_private", "call", "Signing needs a private key and a public one was given."),
        _u(
            "witness_keys_invalid",
            "call",
            "The witness keys are not a list of keys, or the quorum is not a non-negative integer.",
        ),
        _u("role_unknown", "call", "The role is neither `operator` nor `company`."),
        _u("key_not_active", "call", "No active key with this kid is listed in the metadata."),
        _u("key_not_listed", "call", "No key with this kid is listed in the metadata."),
        _u("company_invalid", "call", "The company is not its https issuer identifier."),
        _u("op_id_invalid", "call", "The operation id is not a non-empty string."),
        _u(
            "url_invalid",
            "call",
            "The URL a DPoP proof is made for is not an http(s) URL without user information.",
        ),
        _u("base_url_invalid", "call", "A proof endpoint's base URL is not `https://host` alone."),
        _u("variant_unknown", "call", "The demo variant is not one the demo knows."),
        _u("schema_unknown", "call", "No vxp JSON Schema has this name."),
        _u(
            "schemas_missing",
            "call",
            "The vxp JSON Schemas are neither installed nor in a checkout.",
        ),
        _u(
            "step_refused",
            "build",
            "An OperationBuilder step would sign what the verifier refuses, or is out of "
            "order (`reason` names the rule or the failing check); nothing was signed or logged.",
        ),
        _u("terms_invalid", "build", "The terms are not a JSON object of the required shape."),
        _u("personal_field_clash", "build", "An observed member is both plain and personal."),
        _u("log_origin_invalid", "store", "A log origin is not a non-empty one-line string."),
        _u("log_origin_mismatch", "store", "The store holds the log of another origin."),
        _u(
            "log_store_error",
            "store",
            "The log store cannot be opened or read (a bad "
            "URL, an unreadable file, a failing database).",
        ),
        _u(
            "log_conflict",
            "store",
            "Another writer appended to the log first; nothing "
            "was written (recompute on the new size and retry).",
        ),
        _u(
            "log_corrupt",
            "store",
            "The log store is damaged: entries or subtree hashes "
            "are missing or out of order, or its append-only guards are gone.",
        ),
        _u("log_entry_invalid", "store", "An entry to append to a log is not bytes."),
        _u("log_entry_missing", "store", "The log has no entry at this index."),
        _u(
            "log_size_invalid",
            "store",
            "A tree size asked of a log is not an integer from 0 (1 for the first size of a "
            "consistency proof) to the log's size.",
        ),
        _u(
            "replay_store_unavailable",
            "store",
            "The DPoP replay cache cannot be opened or used, or is not a ReplayCache.",
        ),
        _u("file_unreadable", "cli", "A file named on the command line cannot be read."),
        _u("cli_usage", "cli", "The command-line options contradict each other."),
        # ---- protocol: the package and the issuer's material (verifier stages 1 and 2)
        _p(
            "package_malformed",
            "package",
            "The package is not the shape §8 stage 1 requires (`reason` names the member).",
        ),
        _p(
            "metadata_invalid",
            "trust",
            "The issuer metadata or its JWKS is unusable (`reason` names the member).",
        ),
        _p(
            "live_invalid",
            "trust",
            "The live material or the live log is not the shape "
            "required, or contradicts the saved material.",
        ),
        _p(
            "company_mismatch",
            "trust",
            "The package names another company than the metadata's issuer.",
        ),
        # ---- protocol: parsing (strict encodings, compact JWS, SD-JWT)
        _p(
            "file_invalid",
            "parse",
            "A file named on the command line does not hold the JSON it should.",
        ),
        _p("malformed_base64url", "parse", "A value is not strict unpadded base64url."),
        _p(
            "malformed_json",
            "parse",
            "Bytes are not strict UTF-8 JSON (duplicate names, NaN, a BOM or a syntax error).",
        ),
        _p("not_canonicalizable", "parse", "A value cannot be written as JCS (RFC 8785) JSON."),
        _p("malformed_hash", "parse", "A digest is not `sha-256:` and the base64url of 32 bytes."),
        _p(
            "malformed_jwt",
            "parse",
            "A compact JWS is not three strict segments with JSON object header and payload.",
        ),
        _p("sd_jwt_malformed", "parse", "An SD-JWT is not an ASCII string."),
        _p("missing_trailing_tilde", "parse", "An SD-JWT does not end with `~` (or a KB-JWT)."),
        _p(
            "disclosure_malformed",
            "parse",
            "A disclosure is not the base64url of a JSON "
            "array of 2 or 3 items with string salt and name.",
        ),
        _p(
            "statement_malformed",
            "parse",
            "A statement is not a well-formed VXP statement "
            "(`reason` keeps the SD-JWT layer's code).",
        ),
        # ---- protocol: header and key
        _p("alg_none", "header", "A JWS uses `alg: none`."),
        _p("alg_not_allowed", "header", "A JWS uses an algorithm outside the allow-list."),
        _p("crit_unsupported", "header", "A JWS header has critical extensions."),
        _p("kid_invalid", "header", "A JWS header has a `kid` that is not a string."),
        _p("typ_mismatch", "header", "A JWS header's `typ` is not the one expected."),
        _p("issuer_key_unknown", "key", "No trusted issuer key has the JWS's `kid`."),
        _p("issuer_key_ambiguous", "key", "The JWS names no `kid` and several keys are trusted."),
        _p("alg_key_mismatch", "key", "The JWS algorithm does not fit the issuer key."),
        _p(
            "key_untrusted",
            "key",
            "A statement's key is not trusted for it (unknown, "
            "listed for another role, or outside its validity period).",
        ),
        # ---- protocol: signature
        _p("signature_invalid", "signature", "The issuer signature does not verify."),
        # ---- protocol: SD-JWT content (RFC 9901 §7.1)
        _p("sd_alg_misplaced", "claims", "`_sd_alg` appears somewhere other than the top level."),
        _p("sd_alg_unsupported", "claims", "`_sd_alg` names a hash that is not supported."),
        _p("sd_array_invalid", "claims", "An `_sd` member is not an array of digests."),
        _p("digest_malformed", "claims", "A digest is not the canonical base64url of a hash."),
        _p("digest_duplicate", "claims", "A digest appears more than once."),
        _p("disclosure_repeated", "claims", "The same disclosure is presented twice."),
        _p(
            "disclosure_kind_mismatch",
            "claims",
            "An object-member disclosure is referenced "
            "from an array, or an array-element one from an object.",
        ),
        _p(
            "claim_name_reserved",
            "claims",
            "A claim uses a reserved name (`_sd`, `...`, `_sd_alg`).",
        ),
        _p(
            "claim_name_collision",
            "claims",
            "A disclosed claim name is already a member of the object.",
        ),
        _p(
            "array_placeholder_invalid",
            "claims",
            'An array element `{"...": digest}` has other members or a bad digest.',
        ),
        _p("sd_misplaced", "claims", "A value is marked disclosable twice or at the top level."),
        _p(
            "claims_invalid",
            "claims",
            "The claims are not a JSON object with text member "
            "names, or already hold `cnf` when a holder key is given.",
        ),
        _p("claims_too_deep", "claims", "The claims nest deeper than 64 levels."),
        _p("disclosure_unreferenced", "claims", "A disclosure is not referenced by any digest."),
        _p("claim_invalid", "claims", "An `exp`, `nbf` or `iat` claim is not a number."),
        _p("token_expired", "claims", "The SD-JWT has expired (`exp`)."),
        _p("exp_missing", "claims", "The SD-JWT has no `exp` and the verifier requires one."),
        _p("token_not_yet_valid", "claims", "The SD-JWT is not valid yet (`nbf`)."),
        _p("token_issued_in_future", "claims", "The SD-JWT was issued in the future (`iat`)."),
        # ---- protocol: key binding (RFC 9901 §7.3)
        _p(
            "kb_jwt_unexpected",
            "key_binding",
            "A KB-JWT is present and the verifier did not ask for key binding.",
        ),
        _p("kb_jwt_missing", "key_binding", "Key binding is required and no KB-JWT is present."),
        _p("kb_malformed_jwt", "key_binding", "The KB-JWT is not a well-formed compact JWS."),
        _p("kb_alg_none", "key_binding", "The KB-JWT uses `alg: none`."),
        _p(
            "kb_alg_not_allowed",
            "key_binding",
            "The KB-JWT uses an algorithm outside the allow-list.",
        ),
        _p("kb_crit_unsupported", "key_binding", "The KB-JWT header has critical extensions."),
        _p("kb_kid_invalid", "key_binding", "The KB-JWT header has a `kid` that is not a string."),
        _p("kb_typ_invalid", "key_binding", "The KB-JWT `typ` is not `kb+jwt`."),
        _p(
            "kb_cnf_missing", "key_binding", "The SD-JWT has no `cnf.jwk` to check the KB-JWT with."
        ),
        _p("kb_cnf_invalid", "key_binding", "The SD-JWT's `cnf.jwk` is not a usable key."),
        _p(
            "kb_alg_key_mismatch", "key_binding", "The KB-JWT algorithm does not fit the `cnf` key."
        ),
        _p("kb_signature_invalid", "key_binding", "The KB-JWT signature does not verify."),
        _p(
            "kb_iat_invalid",
            "key_binding",
            "The KB-JWT `iat` is missing or outside the accepted window.",
        ),
        _p("kb_claim_invalid", "key_binding", "The KB-JWT `exp` or `nbf` is not a number."),
        _p("kb_token_expired", "key_binding", "The KB-JWT has expired (`exp`)."),
        _p("kb_token_not_yet_valid", "key_binding", "The KB-JWT is not valid yet (`nbf`)."),
        _p("kb_nonce_mismatch", "key_binding", "The KB-JWT `nonce` is not the expected one."),
        _p("kb_aud_mismatch", "key_binding", "The KB-JWT `aud` is not this verifier."),
        _p(
            "kb_sd_hash_mismatch", "key_binding", "The KB-JWT `sd_hash` does not cover this SD-JWT."
        ),
        # ---- protocol: chaining statements
        _p(
            "approval_invalid",
            "chain",
            "An approval payload is not {request_digest, revision, terms_digest, terms_statement}.",
        ),
        _p(
            "chain_broken",
            "chain",
            "A statement does not name the previous statement's "
            "digest as `prev`, or its `seq` is out of order.",
        ),
        _p(
            "rule_violation",
            "chain",
            "A statement breaks a chain rule of the spec (`reason` names the rule).",
        ),
        # ---- protocol: Merkle trees, checkpoints and witnesses (RFC 9162)
        _p(
            "merkle_argument_invalid",
            "merkle",
            "Leaf data is not bytes, or an index or tree size is not a non-negative integer.",
        ),
        _p(
            "malformed_proof",
            "merkle",
            "A proof or list of hashes is not a list of 32-byte hashes.",
        ),
        _p(
            "tree_size_unknown",
            "merkle",
            "A tree size is larger than the leaf hashes given.",
        ),
        _p("inclusion_index_out_of_range", "merkle", "A leaf index is not inside the tree."),
        _p("consistency_sizes_invalid", "merkle", "A consistency proof needs 0 < size1 <= size2."),
        _p(
            "proof_wrong_length",
            "merkle",
            "A proof is longer or shorter than its tree sizes require.",
        ),
        _p("root_mismatch", "merkle", "A proof leads to another root than the one given."),
        _p(
            "checkpoint_invalid",
            "checkpoint",
            "A checkpoint or signed checkpoint is not the shape required.",
        ),
        _p(
            "checkpoint_key_mismatch",
            "checkpoint",
            "The checkpoint is not signed by the log key (kid or alg).",
        ),
        _p(
            "checkpoint_signature_invalid",
            "checkpoint",
            "The log's checkpoint signature does not verify.",
        ),
        _p("checkpoint_origin_mismatch", "checkpoint", "The checkpoint is from another log."),
        _p(
            "cosignature_invalid",
            "checkpoint",
            "A cosignature is malformed, or a trusted witness's cosignature does not verify.",
        ),
        _p("cosignature_duplicate", "checkpoint", "A witness cosigned the checkpoint twice."),
        _p(
            "cosignature_quorum",
            "checkpoint",
            "Fewer trusted witnesses cosigned than the quorum needs.",
        ),
        _p("witness_unknown_log", "checkpoint", "The witness does not follow this log."),
        _p(
            "witness_rollback",
            "checkpoint",
            "The checkpoint is older than one the witness already cosigned.",
        ),
        # ---- protocol: the verifier's later stages (§8 stages 6 to 9)
        _p(
            "log_invalid",
            "log",
            "The package's log evidence fails (checkpoint, "
            "inclusion, witness; `reason` names the check).",
        ),
        _p("live_inconsistent", "log", "The live log does not extend the packaged checkpoint."),
        _p(
            "operation_mismatch",
            "operation",
            "The package's `op` does not describe the signed chain or the caller's request.",
        ),
        _p(
            "dpop_replay",
            "fetch",
            "A DPoP proof's `jti` was already used within its window (a replay).",
        ),
        _p(
            "assurance_overclaimed",
            "assurance",
            "The outcome claims assurance the evidence does not support (P7).",
        ),
    ],
)
"""Every code :mod:`vxp` raises: usage codes first, then protocol codes in stage order."""


class VxpError(CodedError):
    """The root of every :mod:`vxp` error (a :class:`ValueError`).

    ``VxpError(code, message)`` builds a :class:`VxpUsageError` or a
    :class:`VxpProtocolError`, as :data:`CODES` says; ``code`` is stable (it appears in
    vectors, verdicts and CLI output), ``message`` one sentence naming what was wrong and
    where, ``reason`` an optional finer code.
    """

    codes = CODES


class VxpUsageError(VxpError):
    """The caller broke the rules: a bad key, ``now``, option, URL or callback."""

    kind = "usage"


class VxpProtocolError(VxpError):
    """A peer's data is bad: a package, statement, token, checkpoint, proof or metadata."""

    kind = "protocol"
