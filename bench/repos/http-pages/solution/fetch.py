"""Usage: python3 fetch.py URL

Prints the sum of "value" over every item the paged API at URL serves. GET URL?page=1 returns the
first page, {"items": [{"value": <int>, ...}, ...], "next": <token>}, and GET URL?page=<token>
the page after it; the last page has "next": null. Any page may hold no items.
"""
import json
import sys
import urllib.parse
import urllib.request


def get(url, page):
    with urllib.request.urlopen(url + "?page=" + urllib.parse.quote(str(page)), timeout=10) as r:
        return json.load(r)


def total(url):
    total, page = 0, 1
    while True:
        data = get(url, page)
        total += sum(item["value"] for item in data["items"])
        if data["next"] is None:
            break
        page = data["next"]
    return total


if __name__ == "__main__":
    print(total(sys.argv[1]))
