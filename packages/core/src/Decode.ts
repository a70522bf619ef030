/**
 * Decoding input that a person wrote (a config section, a tool's arguments, a stored value) with a Schema, and
 * saying what was wrong the way a person reads it: one message per field, at its path (`store.retainDays`,
 * `agents[2].model`), in words: the alternatives of a union said once (`expected "session" or "run", got
 * "sesion"`), an unknown key named with the closest known one (`unknown field; did you mean "permission"?`).
 * A message a Schema gives itself (a `message` annotation, a filter's own words) is kept as it is.
 */
import { Either, Option, ParseResult, Schema, SchemaAST as AST } from "effect"

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

/** A value as a message quotes it: `"abc"`, `12`, `nothing`; a long one cut short. */
export const shown = (value: unknown): string => {
  if (value === undefined) return "nothing"
  let text: string
  try {
    text = JSON.stringify(value) ?? String(value)
  } catch {
    text = String(value)
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}

/** `a`, `a or b`, `a, b or c`. */
export const alternatives = (items: ReadonlyArray<string>): string =>
  items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`

/** The edit distance of two words, a swap of neighbours counting one (`modle` is one from `model`). */
const distance = (a: string, b: string): number => {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, rows[i - 2]![j - 2]! + 1)
      }
      rows[i]![j] = best
    }
  }
  return rows[a.length]![b.length]!
}

/** The known word closest to `word`, when it is close enough to be what was meant (a typo, another case). */
export const closest = (word: string, known: ReadonlyArray<string>): string | undefined => {
  const lower = word.toLowerCase()
  let best: { readonly word: string; readonly distance: number } | undefined
  for (const candidate of known) {
    const other = candidate.toLowerCase()
    // A word cut short (`tick` for `tickMs`) is as near as one typo.
    const d = other === lower ? 0 : lower.length >= 3 && other.startsWith(lower) ? 1 : distance(lower, other)
    if (best === undefined || d < best.distance) best = { word: candidate, distance: d }
  }
  const allowed = Math.max(1, Math.min(3, Math.floor(word.length / 3)))
  return best !== undefined && best.distance <= allowed && best.word !== word ? best.word : undefined
}

/** The start of every unknown-key message (a reader that says it its own way looks for it). */
export const UNKNOWN_FIELD = "unknown field"

/** What an unknown key is told: the known key it probably meant, else every known key. */
export const unknownField = (key: string, known: ReadonlyArray<string>): string => {
  const near = closest(key, known)
  if (near !== undefined) return `${UNKNOWN_FIELD}; did you mean "${near}"?`
  return known.length === 0
    ? `${UNKNOWN_FIELD}: nothing is expected here`
    : `${UNKNOWN_FIELD}; expected one of ${known.join(", ")}`
}

/**
 * What a reference to a name that is not there is told (`no run template named "fix-ci"`): the closest known name,
 * else the known ones.
 */
export const unknownName = (what: string, name: string, known: ReadonlyArray<string>, where: string): string => {
  const near = closest(name, known)
  if (near !== undefined) return `no ${what} named "${name}" in ${where}; did you mean "${near}"?`
  return known.length === 0
    ? `no ${what} named "${name}" (${where} has none)`
    : `no ${what} named "${name}" in ${where} (there: ${known.join(", ")})`
}

/** What a schema accepts, in words, as the alternatives a message lists. */
const words = (ast: AST.AST): ReadonlyArray<string> => {
  switch (ast._tag) {
    case "Literal":
      return [
        ast.literal === null
          ? "null"
          : typeof ast.literal === "bigint"
          ? String(ast.literal)
          : JSON.stringify(ast.literal)
      ]
    case "UndefinedKeyword":
    case "VoidKeyword":
    case "NeverKeyword":
      return []
    case "StringKeyword":
      return ["a string"]
    case "NumberKeyword":
      return ["a number"]
    case "BooleanKeyword":
      return ["true", "false"]
    case "ObjectKeyword":
      return ["an object"]
    case "UnknownKeyword":
    case "AnyKeyword":
      return ["any value"]
    case "Union":
      return [...new Set(ast.types.flatMap(words))]
    case "Refinement":
      // As Effect names a refinement: `a positive number`, `an integer`.
      return AST.getDescriptionAnnotation(ast).pipe(
        Option.orElse(() => AST.getTitleAnnotation(ast)),
        Option.match({ onNone: () => words(ast.from), onSome: (said) => [said] })
      )
    case "TupleType":
      return ast.elements.length === 0
        ? ["a list"]
        : ast.rest.length > 0
        ? ["a non-empty list"]
        : [`[${ast.elements.map((e) => alternatives(words(e.type))).join(", ")}]`]
    case "TypeLiteral": {
      const keys = ast.propertySignatures.map((p) => `${String(p.name)}${p.isOptional ? "?" : ""}`)
      return keys.length === 0 || keys.length > 6 ? ["an object"] : [`{ ${keys.join(", ")} }`]
    }
    case "Transformation":
      return words(ast.from)
    case "Suspend":
      return words(ast.f())
    default:
      return [
        AST.getTitleAnnotation(ast).pipe(
          Option.orElse(() => AST.getIdentifierAnnotation(ast)),
          Option.getOrElse(() => "a valid value")
        )
      ]
  }
}

const listOf = (issues: ParseResult.Composite["issues"]): ReadonlyArray<ParseResult.ParseIssue> =>
  Array.isArray(issues) ? issues : [issues as ParseResult.ParseIssue]

/** Whether a member of a union failed because the value is not of its kind at all (not on a field or a rule). */
const shallow = (issue: ParseResult.ParseIssue): boolean => {
  switch (issue._tag) {
    case "Type":
      return true
    case "Refinement":
      return issue.kind === "From" && shallow(issue.issue)
    case "Transformation":
      return issue.kind === "Encoded" && shallow(issue.issue)
    case "Composite":
      return AST.isUnion(issue.ast) && listOf(issue.issues).every(shallow)
    default:
      return false
  }
}

const rebuilt = (composite: ParseResult.Composite, issues: ReadonlyArray<ParseResult.ParseIssue>) =>
  issues.length === 1
    ? new ParseResult.Composite(composite.ast, composite.actual, issues[0]!, composite.output)
    : new ParseResult.Composite(
      composite.ast,
      composite.actual,
      issues as [ParseResult.ParseIssue, ...Array<ParseResult.ParseIssue>],
      composite.output
    )

/** A union that failed: said once, as its alternatives, unless some member got past the kind of the value. */
const union = (composite: ParseResult.Composite): ParseResult.ParseIssue => {
  // A member nobody writes (`undefined`, of an optional field) is no alternative.
  const members = listOf(composite.issues).filter((issue) => !(issue._tag === "Type" && words(issue.ast).length === 0))
  if (members.length === 0) return composite
  const deep = members.filter((issue) => !shallow(issue))
  if (deep.length > 0) return deep.length === 1 ? humanize(deep[0]!) : rebuilt(composite, deep.map(humanize))
  if (members.length === 1) return humanize(members[0]!)
  return new ParseResult.Type(
    composite.ast,
    composite.actual,
    `expected ${alternatives(words(composite.ast))}, got ${shown(composite.actual)}`
  )
}

/** The issue with Effect's defaults said in words; a message of the schema's own still wins where it has one. */
const humanize = (issue: ParseResult.ParseIssue): ParseResult.ParseIssue => {
  switch (issue._tag) {
    case "Type":
      return issue.message !== undefined
        ? issue
        : new ParseResult.Type(
          issue.ast,
          issue.actual,
          `expected ${alternatives(words(issue.ast))}, got ${shown(issue.actual)}`
        )
    case "Pointer":
      return new ParseResult.Pointer(issue.path, issue.actual, humanize(issue.issue))
    case "Refinement":
      return new ParseResult.Refinement(issue.ast, issue.actual, issue.kind, humanize(issue.issue))
    case "Transformation":
      return new ParseResult.Transformation(issue.ast, issue.actual, issue.kind, humanize(issue.issue))
    case "Composite": {
      if (AST.isUnion(issue.ast)) return union(issue)
      const ast = issue.ast
      const known = AST.isTypeLiteral(ast) ? ast.propertySignatures.map((p) => String(p.name)) : undefined
      return rebuilt(
        issue,
        listOf(issue.issues).map((inner) =>
          known !== undefined && inner._tag === "Pointer" && inner.issue._tag === "Unexpected"
            ? new ParseResult.Pointer(
              inner.path,
              inner.actual,
              new ParseResult.Unexpected(inner.issue.actual, unknownField(String(inner.path), known))
            )
            : humanize(inner)
        )
      )
    }
    default:
      return issue
  }
}

/** The issues of a failed decode, one per path under `base`. */
export const fieldIssues = (error: ParseResult.ParseError, base = ""): ReadonlyArray<FieldIssue> => {
  const issues = ParseResult.ArrayFormatter.formatIssueSync(humanize(error.issue))
  // A member of a union whose type does not match at all says nothing when another member's issue lies deeper
  // (`sandbox: { network: ... }` with a bad host is not "expected true or false").
  const deeper = (issue: ParseResult.ArrayFormatterIssue) =>
    issues.some((other) => other.path.length > issue.path.length && issue.path.every((key, i) => other.path[i] === key))
  const byPath = new Map<string, Array<string>>()
  for (const issue of issues.filter((issue) => !(issue._tag === "Type" && deeper(issue)))) {
    const at = formatPath(base, issue.path)
    const messages = byPath.get(at) ?? []
    if (!messages.includes(issue.message)) messages.push(issue.message)
    byPath.set(at, messages)
  }
  return [...byPath].map(([path, messages]) => ({ path, message: messages.join("; ") }))
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
