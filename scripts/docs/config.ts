/**
 * docs/reference/config.md from the config file's one Schema (`ConfigFile.FileSchema`) and the sections' own:
 * every field with its type (and constraints), default and description, walked from the Schema AST. The prose is
 * the Schemas' `description` annotations; a field its own reader checks names the Schema of what it accepts with
 * `ShapeAnnotationId`. The environment's mapping is `ConfigFile.ENVIRONMENT`.
 */
import * as ConfigFile from "@flotta/cli/ConfigFile"
import { ShapeAnnotationId } from "@flotta/core/Spec"
import { Option, SchemaAST as AST } from "effect"
import { banner, code, slug, table } from "./markdown.js"

interface Field {
  readonly name: string
  readonly optional: boolean
  /** The type as written in the file: the shape, when the field names one. */
  readonly type: AST.AST
  readonly description: string | undefined
  readonly default: Option.Option<unknown>
}

const annotation = <A>(annotations: AST.Annotations, id: symbol): A | undefined => annotations[id] as A | undefined

const shapeOf = (annotations: AST.Annotations): AST.AST | undefined =>
  annotation<{ readonly ast: AST.AST }>(annotations, ShapeAnnotationId)?.ast

const description = (annotations: AST.Annotations): string | undefined =>
  annotation<string>(annotations, AST.DescriptionAnnotationId)

/** `T | undefined` (an optional field's encoded side) as `T`. */
const defined = (ast: AST.AST): AST.AST => {
  if (!AST.isUnion(ast)) return ast
  const types = ast.types.filter((t) => !AST.isUndefinedKeyword(t))
  return types.length === 1 ? types[0]! : AST.Union.make(types, ast.annotations)
}

/** Through what does not change the file's shape: suspensions, and transformations (to their encoded side). */
const unwrap = (ast: AST.AST): AST.AST =>
  AST.isSuspend(ast)
    ? unwrap(ast.f())
    : AST.isTransformation(ast) && !isStructTransformation(ast)
    ? unwrap((ast as AST.Transformation).from)
    : ast

const isStructTransformation = (ast: AST.AST): boolean =>
  AST.isTransformation(ast) && AST.isTypeLiteralTransformation(ast.transformation) &&
  AST.isTypeLiteral(ast.from) && AST.isTypeLiteral(ast.to)

/** A struct's fields (a transformation between two structs carries the defaults), or undefined. */
const fieldsOf = (input: AST.AST): ReadonlyArray<Field> | undefined => {
  const ast = unwrap(input)
  if (AST.isTypeLiteral(ast)) {
    if (ast.propertySignatures.length === 0) return undefined
    return ast.propertySignatures.map((p) => ({
      name: String(p.name),
      optional: p.isOptional,
      type: shapeOf(p.annotations) ?? p.type,
      description: description(p.annotations),
      default: AST.getDefaultAnnotation(p)
    }))
  }
  if (!isStructTransformation(ast)) return undefined
  const { from, to, transformation } = ast as AST.Transformation & { from: AST.TypeLiteral; to: AST.TypeLiteral }
  const transformations = (transformation as AST.TypeLiteralTransformation).propertySignatureTransformations
  return from.propertySignatures.map((p) => {
    const target = to.propertySignatures.find((t) => t.name === p.name)
    const annotations = { ...p.annotations, ...target?.annotations }
    const transformation = transformations.find((t) => t.from === p.name)
    return {
      name: String(p.name),
      optional: p.isOptional,
      type: shapeOf(annotations) ?? defined(p.type),
      description: description(annotations),
      default: transformation === undefined ? AST.getDefaultAnnotation(p) : transformation.decode(Option.none())
    }
  })
}

const elementOf = (input: AST.AST): AST.AST | undefined => {
  const ast = unwrap(input)
  return AST.isTupleType(ast) && ast.elements.length === 0 && ast.rest.length === 1 ? ast.rest[0]!.type : undefined
}

const membersOf = (input: AST.AST): ReadonlyArray<AST.AST> | undefined => {
  const ast = unwrap(input)
  return AST.isUnion(ast) ? ast.types.filter((t) => !AST.isUndefinedKeyword(t)) : undefined
}

/** Whether a type gets a section of its own: a struct, or a union with a struct among its forms. */
const isSectioned = (ast: AST.AST): boolean =>
  fieldsOf(ast) !== undefined || (membersOf(ast)?.some((m) => fieldsOf(m) !== undefined) ?? false)

// --- types as text -------------------------------------------------------------------------------------------

/** The constraints of a refinement chain, from the JSON Schema each built-in filter carries. */
const constraints = (input: AST.AST): { base: AST.AST; words: Array<string>; integer: boolean } => {
  let ast = input
  const json: Record<string, unknown> = {}
  while (AST.isRefinement(ast)) {
    Object.assign(json, Option.getOrElse(AST.getJSONSchemaAnnotation(ast), () => ({})))
    ast = ast.from
  }
  const words: Array<string> = []
  const has = (key: string) => typeof json[key] === "number" || typeof json[key] === "string"
  const { exclusiveMaximum, exclusiveMinimum, maxItems, maxLength, maximum, minItems, minLength, minimum, pattern } =
    json
  if (exclusiveMinimum === 0) words.push("above 0")
  else if (has("exclusiveMinimum")) words.push(`above ${exclusiveMinimum}`)
  if (has("minimum") && has("maximum")) words.push(`from ${minimum} to ${maximum}`)
  else if (has("minimum")) words.push(`at least ${minimum}`)
  else if (has("maximum")) words.push(`at most ${maximum}`)
  if (has("exclusiveMaximum")) words.push(`below ${exclusiveMaximum}`)
  if (minLength === 1) words.push("non-empty")
  else if (has("minLength")) words.push(`of at least ${minLength} characters`)
  if (has("maxLength")) words.push(`of at most ${maxLength} characters`)
  if (has("pattern")) words.push(`matching ${code(String(pattern))}`)
  if (has("minItems")) words.push(`of at least ${minItems} items`)
  if (has("maxItems")) words.push(`of at most ${maxItems} items`)
  return { base: ast, words, integer: json["type"] === "integer" }
}

/** A type in a few words; `links` maps the types that have a section to its anchor. */
const typeText = (input: AST.AST, links: ReadonlyMap<AST.AST, string>, inline = false): string => {
  const link = links.get(input) ?? links.get(unwrap(input))
  if (link !== undefined && !inline) {
    // A union's literal forms by name, its struct forms as the link.
    const forms = (membersOf(input) ?? [input]).map((m) => (fieldsOf(m) === undefined ? typeText(m, links, true) : ""))
    return [...new Set(forms.map((form) => form === "" ? `[object](#${link})` : form))].join(" or ")
  }
  const ast = unwrap(input)
  if (AST.isRefinement(ast)) {
    const { base, integer, words } = constraints(ast)
    const text = integer && AST.isNumberKeyword(unwrap(base)) ? "integer" : typeText(base, links, inline)
    return words.length === 0 ? text : `${text}, ${words.join(", ")}`
  }
  switch (ast._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return "string"
    case "NumberKeyword":
      return "number"
    case "BooleanKeyword":
      return "boolean"
    case "UnknownKeyword":
    case "AnyKeyword":
      return "any JSON value"
    case "Literal":
      return code(JSON.stringify(ast.literal))
    case "Enums":
      return ast.enums.map(([, value]) => code(JSON.stringify(value))).join(" or ")
    case "Union":
      return ast.types.filter((t) => !AST.isUndefinedKeyword(t)).map((t) => typeText(t, links, inline)).join(" or ")
    case "TupleType": {
      if (ast.elements.length === 0 && ast.rest.length === 1) {
        const item = typeText(ast.rest[0]!.type, links, inline)
        return `array of ${item.includes(" or ") ? `(${item})` : item}`
      }
      return code(`[${ast.elements.map((e) => plain(e.type)).join(", ")}]`)
    }
    case "TypeLiteral": {
      const fields = ast.propertySignatures
      if (fields.length > 1 && fields.every((p) => p.isOptional && plain(p.type) === plain(fields[0]!.type))) {
        // A map with known keys (weekdays): say the keys once.
        const keys = fields.map((p) => code(String(p.name))).join(", ")
        return `object with any of ${keys}, each ${typeText(fields[0]!.type, links, true)}`
      }
      if (fields.length > 0) return code(plain(ast))
      const [index] = ast.indexSignatures
      if (index === undefined || AST.isUnknownKeyword(index.type) || AST.isAnyKeyword(index.type)) return "object"
      return `object of ${typeText(index.type, links, true)} values`
    }
    case "Declaration":
      return Option.getOrElse(AST.getIdentifierAnnotation(ast), () => "value")
    default:
      return ast._tag
  }
}

/** A type as a TypeScript-like expression (for inline structs and tuples). */
const plain = (input: AST.AST): string => {
  const ast = unwrap(input)
  if (AST.isRefinement(ast)) return constraints(ast).integer ? "integer" : plain(ast.from)
  if (AST.isLiteral(ast)) return JSON.stringify(ast.literal)
  if (AST.isUnion(ast)) return ast.types.filter((t) => !AST.isUndefinedKeyword(t)).map(plain).join(" | ")
  if (AST.isTypeLiteral(ast)) {
    const fields = ast.propertySignatures.map((p) => `${String(p.name)}${p.isOptional ? "?" : ""}: ${plain(p.type)}`)
    return fields.length === 0 ? "object" : `{ ${fields.join(", ")} }`
  }
  if (AST.isTupleType(ast)) {
    const item = ast.rest.length === 1 ? plain(ast.rest[0]!.type) : ""
    return ast.elements.length === 0 && ast.rest.length === 1
      ? (item.includes(" | ") ? `(${item})[]` : `${item}[]`)
      : `[${ast.elements.map((e) => plain(e.type)).join(", ")}]`
  }
  return typeText(ast, new Map(), true)
}

// --- tables and sections -------------------------------------------------------------------------------------

const defaultText = (field: Field) =>
  Option.match(field.default, {
    onNone: () => (field.optional ? "" : "required"),
    onSome: (value) => code(JSON.stringify(value))
  })

/** A struct's rows; a nested struct whose fields are described gets a row per field (`listen.host`). */
const rows = (fields: ReadonlyArray<Field>, links: ReadonlyMap<AST.AST, string>, prefix = ""): Array<Array<string>> =>
  fields.flatMap((field) => {
    const nested = links.has(field.type) ? undefined : fieldsOf(field.type)
    const name = prefix + field.name
    const row = [code(name), typeText(field.type, links), defaultText(field), field.description ?? ""]
    return nested !== undefined && nested.some((f) => f.description !== undefined)
      ? [row, ...rows(nested, links, `${name}.`)]
      : [row]
  })

const fieldTable = (fields: ReadonlyArray<Field>, links: ReadonlyMap<AST.AST, string>) =>
  table(["field", "type", "default", "description"], rows(fields, links))

/** A union's struct form: named by its literal field (`action: "scan"`), else by its first required field. */
const formName = (fields: ReadonlyArray<Field>): string => {
  const literal = fields.find((f) => AST.isLiteral(unwrap(f.type)))
  if (literal !== undefined) return `${literal.name} ${JSON.stringify((unwrap(literal.type) as AST.Literal).literal)}`
  return (fields.find((f) => !f.optional) ?? fields[0])!.name
}

/** One section: a struct's table, or a union's forms, each struct form with a table of its own. */
const section = (name: string, ast: AST.AST, intro: string | undefined, links: ReadonlyMap<AST.AST, string>) => {
  const out = [`## ${name}`]
  if (intro !== undefined) out.push(intro)
  const fields = fieldsOf(ast)
  if (fields !== undefined) {
    out.push(fieldTable(fields, links))
    return out.join("\n\n")
  }
  const forms = (membersOf(ast) ?? []).map((member) => {
    const memberFields = fieldsOf(member)
    if (memberFields === undefined) return { text: typeText(member, links), fields: undefined, heading: "" }
    const heading = `${name}: ${formName(memberFields)}`
    return { text: `an object: [${heading}](#${slug(heading)})`, fields: memberFields, heading }
  })
  out.push("One of:\n\n" + forms.map((form) => `- ${form.text}`).join("\n"))
  for (const form of forms) {
    if (form.fields !== undefined) out.push(`### ${form.heading}`, fieldTable(form.fields, links))
  }
  return out.join("\n\n")
}

/** The page. */
export const configReference = (): string => {
  const top = fieldsOf(ConfigFile.FileSchema.ast)!
  // A type documented in several places gets one section: the list whose entries it describes owns it.
  const owners = [...top].sort((a, b) =>
    Number(elementOf(a.type) === undefined) - Number(elementOf(b.type) === undefined)
  )
  const links = new Map<AST.AST, string>()
  const sections: Array<{ readonly field: Field; readonly ast: AST.AST }> = []
  for (const field of owners) {
    const ast = elementOf(field.type) ?? field.type
    if (!isSectioned(ast) || links.has(ast)) continue
    links.set(ast, slug(field.name))
    sections.push({ field, ast })
  }
  sections.sort((a, b) => top.indexOf(a.field) - top.indexOf(b.field))
  const environment = table(
    ["variable", "overrides", "meaning"],
    ConfigFile.ENVIRONMENT.map((o) => [code(o.variable), code(o.path.join(".")), o.meaning])
  )
  return [
    banner("Configuration reference", "the config Schemas (packages/cli/src/ConfigFile.ts and each section's own)"),
    Option.getOrElse(AST.getDescriptionAnnotation(ConfigFile.FileSchema.ast), () => ""),
    "## Top level",
    table(
      ["field", "type", "description"],
      top.map((f) => [code(f.name), typeText(f.type, links), f.description ?? ""])
    ),
    ...sections.map(({ ast, field }) => section(field.name, ast, field.description, links)),
    "## Environment",
    "Each variable wins over the field it names. A variable for a field inside a section applies only when the " +
    "file has that section: it never switches a server on by itself.",
    environment
  ].join("\n\n") + "\n"
}
