/**
 * Effect Schema as the "Standard Schema + Standard JSON Schema" object the MCP SDK v2 takes for a tool's
 * input and output: validation through Effect (every issue, each with the path of its field), and JSON
 * Schema 2020-12 through `JSONSchema.make`.
 */
import type { StandardSchemaWithJSON } from "@modelcontextprotocol/server"
import { JSONSchema, Predicate, Schema } from "effect"

type Json = Record<string, unknown>

/** Keywords whose value maps names to schemas (the names are not keywords). */
const NAME_MAPS = new Set(["properties", "$defs", "patternProperties"])

/**
 * Drops Effect's refinement titles (`"minLength(1)"`: noise for a model reading the schema), its `$id`s (one
 * `"/schemas/unknown"` per `Schema.Unknown`, which validators reject as duplicates) and, for output
 * schemas, `additionalProperties: false`: a client must not reject a result because it carries one more field.
 */
const tidy = (node: unknown, open: boolean): unknown => {
  if (Array.isArray(node)) return node.map((item) => tidy(item, open))
  if (typeof node !== "object" || node === null) return node
  const out: Json = {}
  for (const [key, value] of Object.entries(node)) {
    if ((key === "title" || key === "$id") && typeof value === "string") continue
    if (open && key === "additionalProperties" && value === false) continue
    if (NAME_MAPS.has(key) && typeof value === "object" && value !== null) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, tidy(sub, open)]))
    } else {
      out[key] = tidy(value, open)
    }
  }
  return out
}

const jsonSchemaOf = <A, I>(schema: Schema.Schema<A, I>, strict: boolean): Json => {
  const { $schema: _, ...rest }: Json = { ...JSONSchema.make(schema, { target: "jsonSchema2020-12" }) }
  const tidied = tidy(rest, !strict)
  return Predicate.isRecord(tidied) ? tidied : rest
}

/**
 * An input schema: unknown fields are errors (so a misspelt argument is named, not ignored) and every
 * issue is reported.
 */
export const input = <A, I>(schema: Schema.Schema<A, I>): StandardSchemaWithJSON<I, A> => {
  const standard = Schema.standardSchemaV1(schema, { errors: "all", onExcessProperty: "error" })
  const json = jsonSchemaOf(schema, true)
  return {
    "~standard": { ...standard["~standard"], jsonSchema: { input: () => json, output: () => json } }
  } as StandardSchemaWithJSON<I, A>
}

/** What a failed call's `structuredContent` holds (see toolResult.errorResult). */
const ERROR_SHAPE: Json = {
  description: "A failed call (isError: true): the error's tag and message",
  properties: {
    error: {
      type: "object",
      properties: { _tag: { type: "string" }, message: { type: "string" } },
      required: ["_tag", "message"]
    }
  },
  required: ["error"]
}

/**
 * An output schema: extra fields are allowed, on the server and in the advertised JSON Schema. The advertised
 * schema also admits a failed call's `{ error: { _tag, message } }`, since some clients (the MCP Inspector among
 * them) validate `structuredContent` even when `isError` is set.
 */
export const output = <A, I>(schema: Schema.Schema<A, I>): StandardSchemaWithJSON<I, A> => {
  const standard = Schema.standardSchemaV1(schema, { errors: "all", onExcessProperty: "ignore" })
  const { type: _, ...success } = jsonSchemaOf(schema, false)
  const json: Json = { type: "object", anyOf: [success, ERROR_SHAPE] }
  return {
    "~standard": { ...standard["~standard"], jsonSchema: { input: () => json, output: () => json } }
  } as StandardSchemaWithJSON<I, A>
}
