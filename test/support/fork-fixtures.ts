/**
 * The fork child the CLI's and the tool bridge's fork tests both make: it appends to a file, adds
 * one, deletes one and makes a link, so its changes hold every kind; its result names its prompt.
 */
export const EDITOR_SPEC = {
  name: "editor",
  script: [
    {
      tool: "bash",
      args: {
        command:
          "echo child >> /work/shared.txt; echo new > /work/new.txt; rm /work/gone.txt; ln -s shared.txt /work/link",
      },
    },
    { text: "edited: {{lastUserMessage}}" },
  ],
};
