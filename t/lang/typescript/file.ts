import { readFileSync } from "fs";
process.stdout.write(readFileSync("data.txt", "utf8"));
