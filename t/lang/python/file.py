with open("data.txt", encoding="utf-8") as f:
    print(f.read(), end="")
