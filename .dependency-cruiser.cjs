// The import-cycle check of `npm run lint`: the house is a tower, so no module may reach itself through its
// imports. Type-only imports and dynamic `import()` count too: a cycle through them still ties the
// modules into one knot (the Store ⇄ Agent and Otlp ⇄ internal/otlpSdk were such cycles).
/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "an import cycle: move what both sides need to a module below them",
      from: {},
      to: { circular: true }
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "a relative or @flotta/* import the cycle check cannot follow (a cycle through it would go unseen)",
      from: {},
      to: { couldNotResolve: true, path: "^([.]|@flotta/|flotta$)" }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|node_modules)/|^bench/out/" },
    // Type-only imports are dependencies too.
    tsPreCompilationDeps: true,
    // @flotta/* resolves to the sources (see tsconfig.depcruise.json); relative `.js` imports find their `.ts`.
    tsConfig: { fileName: "tsconfig.depcruise.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"]
    },
    skipAnalysisNotInRules: true,
    reporterOptions: { text: { highlightFocused: true } }
  }
}
