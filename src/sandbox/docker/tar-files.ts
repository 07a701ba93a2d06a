/**
 * A tar archive (ustar, with a pax header for names over 100 bytes) of plain files, for
 * `putArchive`. Only what writeInputs needs: regular files in one folder, owned by `owner`.
 */
export function tarFiles(files: Record<string, string>, owner: { uid: number; gid: number }): Buffer {
  const blocks: Buffer[] = [];
  const mtime = Math.floor(Date.now() / 1000);
  for (const [name, content] of Object.entries(files)) {
    const body = Buffer.from(content, "utf8");
    const nameBytes = Buffer.byteLength(name);
    if (nameBytes > 100) {
      const pax = paxRecord("path", name);
      blocks.push(header({ name: "PaxHeader", size: pax.length, type: "x", mode: 0o644, mtime, owner }), pad(pax));
    }
    blocks.push(header({ name: nameBytes > 100 ? "long-name" : name, size: body.length, type: "0", mode: 0o644, mtime, owner }), pad(body));
  }
  blocks.push(Buffer.alloc(1024)); // two empty blocks end the archive
  return Buffer.concat(blocks);
}

interface Header {
  name: string;
  size: number;
  type: "0" | "x";
  mode: number;
  mtime: number;
  owner: { uid: number; gid: number };
}

function header(h: Header): Buffer {
  const block = Buffer.alloc(512);
  const put = (offset: number, length: number, value: string) => block.write(value, offset, length, "utf8");
  const octal = (offset: number, length: number, value: number) => put(offset, length, value.toString(8).padStart(length - 1, "0") + "\0");
  put(0, 100, h.name);
  octal(100, 8, h.mode);
  octal(108, 8, h.owner.uid);
  octal(116, 8, h.owner.gid);
  octal(124, 12, h.size);
  octal(136, 12, h.mtime);
  put(148, 8, " ".repeat(8)); // checksum is computed with its own field as spaces
  put(156, 1, h.type);
  put(257, 6, "ustar\0");
  put(263, 2, "00");
  let sum = 0;
  for (const byte of block) sum += byte;
  put(148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
  return block;
}

/** A pax record "<len> key=value\n", where len counts the whole record including itself. */
function paxRecord(key: string, value: string): Buffer {
  const rest = ` ${key}=${value}\n`;
  const restBytes = Buffer.byteLength(rest);
  let digits = 1;
  while (String(restBytes + digits).length !== digits) digits += 1;
  return Buffer.from(`${restBytes + digits}${rest}`, "utf8");
}

function pad(data: Buffer): Buffer {
  const rest = data.length % 512;
  return rest === 0 ? data : Buffer.concat([data, Buffer.alloc(512 - rest)]);
}
