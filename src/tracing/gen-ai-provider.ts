/**
 * pi-ai's provider names where the GenAI conventions' `gen_ai.provider.name` has a well-known
 * value for the same service; any other provider is sent under its pi-ai name (the conventions
 * allow a custom value).
 */
const WELL_KNOWN: Readonly<Record<string, string>> = {
  "amazon-bedrock": "aws.bedrock",
  "azure-openai-responses": "azure.ai.openai",
  google: "gcp.gemini",
  "google-vertex": "gcp.vertex_ai",
  mistral: "mistral_ai",
  xai: "x_ai",
};

export function genAiProvider(piProvider: string): string {
  return WELL_KNOWN[piProvider] ?? piProvider;
}
