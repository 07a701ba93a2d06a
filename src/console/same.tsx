import { Component, type ComponentChildren } from "preact";

/**
 * Draws `draw()` again only when `sig` changed: what keeps a frame of 1,000 agents' events cheap,
 * where most drawn rows did not change. `sig` must name everything `draw` shows.
 */
export class Same extends Component<{ sig: string; draw: () => ComponentChildren }> {
  override shouldComponentUpdate(next: { sig: string }): boolean {
    return next.sig !== this.props.sig;
  }
  override render() {
    return this.props.draw();
  }
}
