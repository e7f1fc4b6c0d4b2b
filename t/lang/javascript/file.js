const fs = require("fs");
process.stdout.write(fs.readFileSync("data.txt", "utf8"));
