print File.read("data.txt")
