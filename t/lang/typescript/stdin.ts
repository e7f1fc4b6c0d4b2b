import * as fs from "fs";
const input: string = fs.readFileSync(0, "utf8");
process.stdout.write(input);
