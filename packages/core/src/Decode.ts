/**
 * Decoding input that a person wrote (a config section, a tool's arguments, a stored value) with a Schema, and
 * saying what was wrong the way a person reads it: one message per field, at its path (`store.retainDays`,
 * `agents[2].model`), with the alternatives of a union said once.
 */
import { Either, ParseResult, Schema } from "effect"

/** An optional field that is absent or present, never present as `undefined`. */
export const exact = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.optionalWith(schema, { exact: true })

/** A path as config files write it: `base.key[0].other` (or `key[0].other` when `base` is empty). */
export const formatPath = (base: string, path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => typeof key === "number" ? `${acc}[${key}]` : acc.length === 0 ? String(key) : `${acc}.${String(key)}`,
    base
  )

/** One thing wrong with the input, at its path. */
export interface FieldIssue {
  readonly path: string
  readonly message: string
}

/** The issues of a failed decode, one per path under `base`. */
export const fieldIssues = (error: ParseResult.ParseError, base = ""): ReadonlyArray<FieldIssue> => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  // A union reports one issue per member at the same path: say them once, as alternatives. A member whose type
  // does not match at all says nothing when another member's issue lies deeper (`sandbox: { network: ... }` with
  // a bad host is not "expected a boolean").
  const deeper = (issue: ParseResult.ArrayFormatterIssue) =>
    issues.some((other) => other.path.length > issue.path.length && issue.path.every((key, i) => other.path[i] === key))
  const byPath = new Map<string, Array<string>>()
  for (const issue of issues.filter((issue) => !(issue._tag === "Type" && deeper(issue)))) {
    const at = formatPath(base, issue.path)
    const messages = byPath.get(at) ?? []
    if (!messages.includes(issue.message)) messages.push(issue.message)
    byPath.set(at, messages)
  }
  return [...byPath].map(([path, messages]) => ({ path, message: messages.join(", or ") }))
}

/** Decodes `input`, reporting every issue at its path under `base`. Unknown keys are errors unless told otherwise. */
export const decodeAt = <A, I>(
  schema: Schema.Schema<A, I>,
  input: unknown,
  base = "",
  onExcessProperty: "error" | "ignore" = "error"
): Either.Either<A, ReadonlyArray<FieldIssue>> =>
  Either.mapLeft(
    Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty })(input),
    (error) => fieldIssues(error, base)
  )

/** A value as a message quotes it: `"abc"`, `12`, `nothing`. */
export const shown = (value: unknown): string => (value === undefined ? "nothing" : JSON.stringify(value))
