/**
 * docs/reference/cli.md from the `flotta` command tree: every command and subcommand with its usage, description,
 * arguments and options, as @effect/cli's own help gives them (`CommandDescriptor.getHelp`, `getUsage`), turned
 * from its `HelpDoc` into Markdown.
 */
import type { Command } from "@effect/cli"
import { CliConfig, CommandDescriptor, HelpDoc, Usage } from "@effect/cli"
import type { Span } from "@effect/cli/HelpDoc/Span"
import { banner, code, slug, table } from "./markdown.js"

type Descriptor = CommandDescriptor.Command<unknown>

/** The built-in options (`--help`, `--version`, `--completions`, ...) are shown once, on the root command. */
const CONFIG = CliConfig.make({ showBuiltIns: false })
const ROOT_CONFIG = CliConfig.make({ showBuiltIns: true })

const spanText = (span: Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Weak":
    case "Strong":
    case "Highlight":
      return spanText(span.value)
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
  }
}

/** A HelpDoc as its blocks, in order (sequences flattened). */
const blocks = (doc: HelpDoc.HelpDoc): Array<HelpDoc.HelpDoc> =>
  doc._tag === "Sequence" ? [...blocks(doc.left), ...blocks(doc.right)] : doc._tag === "Empty" ? [] : [doc]

/** The blocks under each top-level header (DESCRIPTION, ARGUMENTS, OPTIONS, COMMANDS). */
const sections = (doc: HelpDoc.HelpDoc): Map<string, Array<HelpDoc.HelpDoc>> => {
  const out = new Map<string, Array<HelpDoc.HelpDoc>>()
  let current = ""
  for (const block of blocks(doc)) {
    if (block._tag === "Header") {
      current = spanText(block.value).trim()
      out.set(current, [])
    } else out.get(current)?.push(block)
  }
  return out
}

/** @effect/cli's words for a value's kind and optionality, which the usage line's brackets already say. */
const NOISE = [
  "A user-defined piece of text that is confidential.",
  "A user-defined piece of text.",
  "A true or false value.",
  "This setting is optional."
]

const paragraphs = (doc: HelpDoc.HelpDoc): Array<string> =>
  blocks(doc).flatMap((block) =>
    block._tag === "Paragraph"
      ? [spanText(block.value)]
      : block._tag === "Enumeration"
      ? block.elements.flatMap(paragraphs)
      : block._tag === "DescriptionList"
      ? block.definitions.map(([span, body]) => `${spanText(span)}: ${paragraphs(body).join(" ")}`)
      : []
  ).map((text) => NOISE.reduce((acc, noise) => acc.replace(noise, ""), text).trim()).filter((text) => text.length > 0)

/**
 * A description as Markdown: paragraphs of running text, and the lines a description indents (a list of exit codes,
 * of variables) kept as they are, in a text block.
 */
const prose = (text: string): string =>
  text.split(/\n\s*\n/).map((paragraph) => {
    const out: Array<string> = []
    let running: Array<string> = []
    let indented: Array<string> = []
    const flush = () => {
      if (running.length > 0) out.push(running.join(" "))
      if (indented.length > 0) out.push("```text\n" + indented.join("\n") + "\n```")
      running = []
      indented = []
    }
    for (const line of paragraph.split("\n")) {
      if (/^\s/.test(line)) {
        if (running.length > 0) flush()
        indented.push(line)
      } else {
        if (indented.length > 0) flush()
        running.push(line.trim())
      }
    }
    flush()
    return out.join("\n\n")
  }).join("\n\n")

/** Paragraphs run together, each ending as a sentence. */
const sentences = (texts: ReadonlyArray<string>): string =>
  texts.map((text) => (/[.!?:)]$/.test(text) ? text : `${text}.`)).join(" ")

/** A description list (arguments, options) as a table: the names, then what the help says of them. */
const definitions = (docs: ReadonlyArray<HelpDoc.HelpDoc>, what: string): string | undefined => {
  const rows = docs.flatMap((doc) => blocks(doc)).flatMap((block) =>
    block._tag === "DescriptionList"
      ? block.definitions.map(([span, body]) => [code(spanText(span).trim()), sentences(paragraphs(body))])
      : []
  )
  return rows.length === 0 ? undefined : table([what, "description"], rows)
}

const usageOf = (descriptor: Descriptor): string =>
  blocks(Usage.getHelp(CommandDescriptor.getUsage(descriptor))).map((block) =>
    block._tag === "Paragraph" ? spanText(block.value) : ""
  ).join(" ").trim()

interface Entry {
  readonly path: ReadonlyArray<string>
  /** The command itself, without its subcommands: what its own help describes. */
  readonly own: Descriptor
  /** The command with its subcommands: what its usage shows. */
  readonly whole: Descriptor
}

/**
 * A descriptor's structure, which @effect/cli (0.77) keeps on the descriptor itself: `getSubcommands` answers one
 * level only, and a nested command's children are not reachable through it.
 */
type Node =
  | { readonly _tag: "Standard" | "GetUserInput"; readonly name: string }
  | { readonly _tag: "Map"; readonly command: Node }
  | { readonly _tag: "Subcommands"; readonly parent: Node; readonly children: ReadonlyArray<Node> }

const own = (
  node: Node
): Node => (node._tag === "Map" ? own(node.command) : node._tag === "Subcommands" ? own(node.parent) : node)

const nameOf = (node: Node): string => {
  const self = own(node)
  return "name" in self ? self.name : "?"
}

const childrenOf = (node: Node): ReadonlyArray<Node> =>
  node._tag === "Map" ? childrenOf(node.command) : node._tag === "Subcommands" ? node.children : []

/** Every command under `node`, depth first, in the order the tree gives them. */
const walk = (parent: ReadonlyArray<string>, node: Node): Array<Entry> => {
  const path = [...parent, nameOf(node)]
  return [
    { path, own: own(node) as unknown as Descriptor, whole: node as unknown as Descriptor },
    ...childrenOf(node).flatMap((child) => walk(path, child))
  ]
}

const commandSection = (entry: Entry, config = CONFIG): string => {
  const help = sections(CommandDescriptor.getHelp(entry.own, config))
  const description = prose(paragraphs(HelpDoc.blocks(help.get("DESCRIPTION") ?? [])).join("\n\n"))
  const usage = [...entry.path.slice(0, -1), usageOf(entry.whole)].join(" ")
  const args = definitions(help.get("ARGUMENTS") ?? [], "argument")
  const options = definitions(help.get("OPTIONS") ?? [], "option")
  return [
    `## ${entry.path.join(" ")}`,
    "```text\n" + usage + "\n```",
    description,
    ...(args === undefined ? [] : [args]),
    ...(options === undefined ? [] : [options])
  ].filter((part) => part.length > 0).join("\n\n")
}

/** The first sentence of a command's description, for the summary. */
const summaryOf = (entry: Entry): string => {
  const help = sections(CommandDescriptor.getHelp(entry.own, CONFIG))
  const [first = ""] = paragraphs(HelpDoc.blocks(help.get("DESCRIPTION") ?? []))
  const sentence = /^[\s\S]*?\.(\s|$)/.exec(first)?.[0] ?? first
  return sentence.replace(/\s+/g, " ").trim()
}

/** The page, from the root command (the tree `flotta` runs). */
export const cliReference = <Name extends string, R, E, A>(root: Command.Command<Name, R, E, A>): string => {
  const entries = walk([], root.descriptor as unknown as Node)
  const [top, ...commands] = entries
  const summary = table(
    ["command", "what it does"],
    commands.map((entry) => {
      const name = entry.path.join(" ")
      return [`[${name}](#${slug(name)})`, summaryOf(entry)]
    })
  )
  return [
    banner("CLI reference", "the `flotta` command tree (packages/cli/src, each command's descriptions)"),
    "Every command of `flotta`, its arguments and its options. The config file and the environment variables " +
    "that override it: [the config reference](config.md).",
    commandSection(top!, ROOT_CONFIG),
    summary,
    ...commands.map((entry) => commandSection(entry))
  ].join("\n\n") + "\n"
}
