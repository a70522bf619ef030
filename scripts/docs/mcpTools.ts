/**
 * docs/reference/mcp-tools.md from the MCP server's table of tools (`Tools.tools`, which holds the scheduler's and
 * the approvals' tools too): each tool's name, title, description and hints, and its arguments and result, read
 * from the JSON Schemas a client is sent (`tools/list`), so the page says exactly what a client sees.
 */
import * as Tools from "@flotta/mcp/Tools"
import { banner, code, slug, table } from "./markdown.js"

export type Json = { readonly [key: string]: unknown }

export const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A tool's advertised schema (the Standard JSON Schema its `inputSchema` or `outputSchema` carries). */
const advertised = (schema: unknown, side: "input" | "output"): Json => {
  const standard = (schema as { readonly "~standard": { readonly jsonSchema: Record<string, (o: Json) => Json> } })[
    "~standard"
  ]
  return standard.jsonSchema[side]!({ target: "draft-2020-12" })
}

/** `$ref`s followed into the root's `$defs` (also under a one-member `allOf`, which carries a description). */
export const resolve = (root: Json, node: Json): Json => {
  const allOf = node["allOf"]
  if (Array.isArray(allOf) && allOf.length === 1 && isObject(allOf[0])) {
    const { allOf: _, ...own } = node
    return { ...resolve(root, allOf[0]), ...own }
  }
  const ref = node["$ref"]
  if (typeof ref !== "string" || !ref.startsWith("#/$defs/")) return node
  const target = (root["$defs"] as Json | undefined)?.[ref.slice("#/$defs/".length)]
  return isObject(target) ? resolve(root, target) : node
}

const constraintWords = (node: Json): Array<string> => {
  const words: Array<string> = []
  const n = (key: string) => (typeof node[key] === "number" ? node[key] : undefined)
  if (n("exclusiveMinimum") !== undefined) words.push(`above ${n("exclusiveMinimum")}`)
  if (n("minimum") !== undefined && n("maximum") !== undefined) words.push(`from ${n("minimum")} to ${n("maximum")}`)
  else if (n("minimum") !== undefined) words.push(`at least ${n("minimum")}`)
  else if (n("maximum") !== undefined) words.push(`at most ${n("maximum")}`)
  if (n("exclusiveMaximum") !== undefined) words.push(`below ${n("exclusiveMaximum")}`)
  if (n("minLength") === 1) words.push("non-empty")
  else if (n("minLength") !== undefined) words.push(`of at least ${n("minLength")} characters`)
  if (typeof node["pattern"] === "string") words.push(`matching ${code(node["pattern"])}`)
  if (n("minItems") !== undefined) words.push(`of at least ${n("minItems")} items`)
  return words
}

const JSON_TYPES = ["object", "array", "string", "number", "boolean", "null"]

/** A JSON Schema in a few words. */
export const typeText = (root: Json, input: Json): string => {
  const node = resolve(root, input)
  const words = constraintWords(node)
  const withWords = (text: string) => (words.length === 0 ? text : `${text}, ${words.join(", ")}`)
  if ("const" in node) return code(JSON.stringify(node["const"]))
  if (Array.isArray(node["enum"])) return node["enum"].map((v) => code(JSON.stringify(v))).join(" or ")
  const anyOf = node["anyOf"] ?? node["oneOf"]
  if (Array.isArray(anyOf)) {
    const types = new Set(anyOf.filter(isObject).map((member) => member["type"]))
    if (JSON_TYPES.every((type) => types.has(type))) return "any JSON value"
    return [...new Set(anyOf.filter(isObject).map((member) => typeText(root, member)))].join(" or ")
  }
  const type = node["type"]
  if (Array.isArray(type)) return withWords(type.join(" or "))
  switch (type) {
    case "array": {
      if (!isObject(node["items"])) return withWords("array")
      const items = typeText(root, node["items"])
      return withWords(`array of ${items.includes(" or ") ? `(${items})` : items}`)
    }
    case "object": {
      const properties = node["properties"]
      if (isObject(properties) && Object.keys(properties).length > 0) {
        const required = new Set(Array.isArray(node["required"]) ? node["required"] : [])
        const fields = Object.entries(properties).map(([name, sub]) =>
          `${name}${required.has(name) ? "" : "?"}: ${isObject(sub) ? plain(root, sub) : "unknown"}`
        )
        return code(`{ ${fields.join(", ")} }`)
      }
      const extra = node["additionalProperties"]
      return isObject(extra) && Object.keys(extra).length > 0 ? `object of ${typeText(root, extra)} values` : "object"
    }
    case undefined:
      return "any JSON value"
    default:
      return withWords(String(type))
  }
}

/** A JSON Schema as a TypeScript-like expression, inside an inline object. */
const plain = (root: Json, input: Json): string => {
  const node = resolve(root, input)
  if ("const" in node) return JSON.stringify(node["const"])
  if (Array.isArray(node["enum"])) return node["enum"].map((v) => JSON.stringify(v)).join(" | ")
  const anyOf = node["anyOf"] ?? node["oneOf"]
  if (Array.isArray(anyOf)) return [...new Set(anyOf.filter(isObject).map((m) => plain(root, m)))].join(" | ")
  if (node["type"] === "array") return `${isObject(node["items"]) ? plain(root, node["items"]) : "unknown"}[]`
  if (node["type"] === "object") {
    const properties = node["properties"]
    return isObject(properties) && Object.keys(properties).length > 0 ? "{ … }" : "object"
  }
  return typeof node["type"] === "string" ? node["type"] : "unknown"
}

/** The object an array or a nullable holds, if it is one with properties (its fields get rows of their own). */
const objectWithin = (root: Json, input: Json): { readonly node: Json; readonly suffix: string } | undefined => {
  const node = resolve(root, input)
  if (node["type"] === "object" && isObject(node["properties"]) && Object.keys(node["properties"]).length > 0) {
    return { node, suffix: "" }
  }
  if (node["type"] === "array" && isObject(node["items"])) {
    const inner = objectWithin(root, node["items"])
    return inner === undefined ? undefined : { node: inner.node, suffix: `[]${inner.suffix}` }
  }
  const anyOf = node["anyOf"]
  if (Array.isArray(anyOf)) {
    const objects = anyOf.filter(isObject).map((m) => objectWithin(root, m)).filter((m) => m !== undefined)
    return objects.length === 1 ? objects[0] : undefined
  }
  return undefined
}

/** A type whose objects get rows of their own, named without their fields: `array of object or null`. */
const kindOf = (root: Json, input: Json): string => {
  const node = resolve(root, input)
  const anyOf = node["anyOf"]
  if (Array.isArray(anyOf)) return [...new Set(anyOf.filter(isObject).map((m) => kindOf(root, m)))].join(" or ")
  if (node["type"] === "object" && isObject(node["properties"])) return "object"
  if (node["type"] === "array" && isObject(node["items"])) return `array of ${kindOf(root, node["items"])}`
  return typeText(root, node)
}

/** Rows of an object's fields: `name`, `type`, required or not, description; nested objects as `a.b`, `a[].b`. */
export const fieldRows = (root: Json, node: Json, prefix = "", depth = 0): Array<Array<string>> => {
  const properties = isObject(node["properties"]) ? node["properties"] : {}
  const required = new Set(Array.isArray(node["required"]) ? node["required"] : [])
  return Object.entries(properties).flatMap(([name, sub]) => {
    if (!isObject(sub)) return []
    const path = `${prefix}${name}`
    const within = depth < 2 ? objectWithin(root, sub) : undefined
    const type = within === undefined ? typeText(root, sub) : kindOf(root, sub)
    const description = typeof resolve(root, sub)["description"] === "string"
      ? String(resolve(root, sub)["description"])
      : typeof sub["description"] === "string"
      ? sub["description"]
      : ""
    const row = [code(path), type, required.has(name) ? "yes" : "", description]
    return within === undefined ? [row] : [row, ...fieldRows(root, within.node, `${path}${within.suffix}.`, depth + 1)]
  })
}

const HINTS = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const

const yesNo = (value: unknown) => (value === true ? "yes" : value === false ? "no" : "")

const toolSection = (tool: (typeof Tools.tools)[number]): string => {
  const input = advertised(tool.inputSchema, "input")
  const output = advertised(tool.outputSchema, "output")
  const success = Array.isArray(output["anyOf"]) && isObject(output["anyOf"][0]) ? output["anyOf"][0] : output
  const inputRows = fieldRows(input, input)
  const outputRows = fieldRows(output, success)
  const hints = HINTS.map((hint) => `${code(hint)} ${String(tool.annotations[hint] ?? "unset")}`).join(", ")
  return [
    `## ${tool.name}`,
    `**${tool.title}.** ${tool.description}`,
    `Hints: ${hints}.`,
    "Arguments:",
    inputRows.length === 0 ? "none." : table(["argument", "type", "required", "description"], inputRows),
    "Result (`structuredContent`):",
    outputRows.length === 0 ? "nothing." : table(["field", "type", "always", "description"], outputRows)
  ].join("\n\n")
}

/** The page. */
export const mcpToolsReference = (): string => {
  const summary = table(
    ["tool", "title", "read-only", "destructive", "idempotent", "open world"],
    Tools.tools.map((tool) => [
      `[${tool.name}](#${slug(tool.name)})`,
      tool.title,
      ...HINTS.map((hint) => yesNo(tool.annotations[hint]))
    ])
  )
  const anyTool = Tools.tools[0]
  const failure = anyTool === undefined ? undefined : advertised(anyTool.outputSchema, "output")["anyOf"]
  // Every output schema admits a failed call's shape beside the result.
  const failureText = Array.isArray(failure) && isObject(failure[1])
    ? "Any call may fail instead: the result then has `isError: true`, and its `structuredContent` is " +
      "`{ \"error\": { \"_tag\", \"message\" } }`, the error's tag and a message that says what to do."
    : ""
  return [
    banner("MCP tools reference", "the MCP tool table (packages/mcp/src/Tools.ts and the tools it includes)"),
    `The tools \`flotta serve\` serves at \`/mcp\` and \`flotta mcp\` over stdio, in the order \`tools/list\` gives ` +
    "them, with the JSON Schemas a client is sent.",
    summary,
    failureText,
    ...Tools.tools.map(toolSection)
  ].filter((part) => part.length > 0).join("\n\n") + "\n"
}
