/**
 * The runnable parts of a Markdown page, in order, as test/readme.test.ts runs them: a ```json block whose info
 * string names `flotta.config.json` (the config the commands after it use), each line of a ```sh block, each
 * `$ ` line of a ```console block (with the exit code it shows after `; echo $?`), and the code blocks that are
 * whole programs (they start with `import`) or whole test files (they start with `// name.test.ts`).
 */

export type Step =
  | { readonly _tag: "Config"; readonly json: string }
  | { readonly _tag: "Command"; readonly line: string; readonly background: boolean; readonly exitCode: number }
  | { readonly _tag: "Program"; readonly language: "js" | "ts"; readonly code: string }
  | { readonly _tag: "TestFile"; readonly name: string; readonly code: string }

/** A shell line without its trailing comment (a `#` outside quotes, after a space). */
export const stripComment = (line: string): string => {
  let quote: string | null = null
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (quote !== null) {
      if (c === "\\" && quote === "\"") i++
      else if (c === quote) quote = null
    } else if (c === "'" || c === "\"") quote = c
    else if (c === "#" && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd()
  }
  return line.trimEnd()
}

/** Splits a command line into words, honouring single and double quotes (all the docs use). */
export const words = (line: string): Array<string> => {
  const out: Array<string> = []
  const pattern = /'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g
  for (const m of line.matchAll(pattern)) out.push(m[1] ?? (m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3]!))
  return out
}

const command = (raw: string, output: ReadonlyArray<string>): Step | undefined => {
  let line = stripComment(raw.trim())
  if (line.length === 0) return undefined
  let exitCode = 0
  const echo = /;\s*echo \$\?$/.exec(line)
  if (echo !== null) {
    line = line.slice(0, echo.index).trim()
    exitCode = Number(output.at(-1))
  }
  const background = line.endsWith("&")
  if (background) line = line.slice(0, -1).trim()
  return { _tag: "Command", line, background, exitCode }
}

/** The steps of one page. */
export const steps = (markdown: string): Array<Step> => {
  const out: Array<Step> = []
  for (const m of markdown.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)) {
    const [language = "", ...rest] = m[1]!.trim().split(/\s+/)
    const body = m[2]!
    if (language === "json" && rest.includes("flotta.config.json")) out.push({ _tag: "Config", json: body })
    else if (language === "sh") {
      for (const line of body.split("\n")) {
        const step = command(line, [])
        if (step !== undefined) out.push(step)
      }
    } else if (language === "console") {
      const lines = body.split("\n")
      lines.forEach((line, i) => {
        if (!line.startsWith("$ ")) return
        const next = lines.findIndex((l, j) => j > i && l.startsWith("$ "))
        const step = command(line.slice(2), lines.slice(i + 1, next === -1 ? undefined : next).filter((l) => l !== ""))
        if (step !== undefined) out.push(step)
      })
    } else if (language === "js" || language === "ts") {
      const test = /^\/\/ ([\w.-]+\.test\.ts)\b/.exec(body)
      if (test !== null) out.push({ _tag: "TestFile", name: test[1]!, code: body })
      else if (body.startsWith("import ")) out.push({ _tag: "Program", language, code: body })
    }
  }
  return out
}
