print("httpop")
